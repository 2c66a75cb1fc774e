// examples/calculator's own binary end to end: @ag-ui/client 1.0.0 asks it to calculate, the
// model (aimock, tests/fixtures/aimock-openai.json) calls the example's `calculate` tool, and the
// tool's result comes back as TOOL_CALL_RESULT, changes the state, and is what the model answers
// from (aimock's journal shows the result in the model's second request).
//
// Environment:
//   AGUI_BASE   (required) the example binary's base URL (target/debug/examples/calculator)
//   AIMOCK_URL  (required) the aimock it uses as its model, e.g. http://127.0.0.1:4010
//   CAPTURE_DIR (optional) every response body is saved there as example-<n>.sse
//
// Run: cd tests/node && npm ci && AGUI_BASE=... AIMOCK_URL=... node --test example.test.mjs

import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { HttpAgent } from "@ag-ui/client";
import { saveCapture } from "./capture.mjs";

const BASE = process.env.AGUI_BASE;
const AIMOCK_URL = process.env.AIMOCK_URL;
const CAPTURE_DIR = process.env.CAPTURE_DIR || "";
let captured = 0;

test("the example's tool is called, streamed as TOOL_CALL_RESULT and used in the answer", async () => {
  assert.ok(BASE && AIMOCK_URL, "set AGUI_BASE and AIMOCK_URL");
  const capabilities = await (await fetch(`${BASE}/capabilities`)).json();
  assert.ok(
    capabilities.tools.items.some((tool) => tool.name === "calculate"),
    "the example offers its own tool",
  );

  const question = `calculate 6 times 7 (${randomUUID()})`;
  const agent = new HttpAgent({
    url: `${BASE}/agent`,
    threadId: randomUUID(),
    initialMessages: [{ id: randomUUID(), role: "user", content: question }],
    fetch: async (url, init) => {
      const response = await fetch(url, init);
      const text = await response.text();
      if (CAPTURE_DIR) {
        saveCapture(CAPTURE_DIR, `example-${++captured}`, text, init?.body);
      }
      return new Response(text, { status: response.status, headers: response.headers });
    },
  });
  const events = [];
  await agent.runAgent(
    { runId: randomUUID(), tools: [], context: [] },
    { onEvent: ({ event }) => events.push(structuredClone(event)) },
  );

  const start = events.find((event) => event.type === "TOOL_CALL_START");
  assert.equal(start?.toolCallName, "calculate");
  const result = events.find((event) => event.type === "TOOL_CALL_RESULT");
  assert.equal(result.toolCallId, start.toolCallId);
  assert.deepEqual(JSON.parse(result.content), { result: 42 });
  assert.equal(agent.state.lastResult, 42, "the tool's state patch reached the client");
  const answer = events
    .filter((event) => event.type === "TEXT_MESSAGE_CONTENT")
    .map((event) => event.delta)
    .join("");
  assert.equal(answer, "6 times 7 is 42.");
  assert.equal(events.at(-1).type, "RUN_FINISHED");

  const journal = await (await fetch(`${AIMOCK_URL}/__aimock/journal`)).json();
  const asked = journal.filter((entry) => JSON.stringify(entry.body?.messages ?? []).includes(question));
  assert.equal(asked.length, 2, "one model turn to call the tool, one to answer");
  const toolMessage = asked[1].body.messages.find((message) => message.role === "tool");
  assert.deepEqual(JSON.parse(toolMessage.content), { result: 42 });
});
