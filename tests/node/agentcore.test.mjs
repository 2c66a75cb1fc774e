// AgentCore Runtime mode (HOSTING=agentcore) with the AG-UI TypeScript client: @ag-ui/client
// 1.0.0's HttpAgent runs through POST /invocations with the session header AgentCore passes on,
// and parses the stream without a warning; GET /ping answers as AgentCore's contract says.
//
// Environment:
//   AGUI_BASE    (required) the server, e.g. http://127.0.0.1:8080
//   CAPTURE_DIR  (optional) the raw stream is saved there as agentcore-invocations.sse
//
// Run: cd tests/node && AGUI_BASE=... node --test agentcore.test.mjs

import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { HttpAgent } from "@ag-ui/client";
import { saveCapture } from "./capture.mjs";

const AGUI_BASE = process.env.AGUI_BASE;
const CAPTURE_DIR = process.env.CAPTURE_DIR || "";
const SESSION_HEADER = "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id";

delete process.env.SUPPRESS_TRANSFORMATION_WARNINGS;

test("GET /ping answers Healthy with the time of the last change in Unix seconds", async () => {
  assert.ok(AGUI_BASE, "set AGUI_BASE");
  const response = await fetch(`${AGUI_BASE}/ping`);
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("content-type"), "application/json");
  const body = await response.json();
  assert.equal(body.status, "Healthy");
  assert.ok(Number.isInteger(body.time_of_last_update), JSON.stringify(body));
  const now = Date.now() / 1000;
  assert.ok(body.time_of_last_update <= now && body.time_of_last_update > now - 3600, JSON.stringify(body));
});

test("@ag-ui/client 1.0.0 runs through POST /invocations in the session's thread", async () => {
  const session = `${randomUUID()}-agentcore-session`;
  const warnings = [];
  const [warn, error] = [console.warn, console.error];
  console.warn = (...args) => warnings.push(args.map(String).join(" "));
  console.error = (...args) => warnings.push(args.map(String).join(" "));
  let captured = "";
  const capturingFetch = async (url, init) => {
    const response = await fetch(url, init);
    const [forClient, forCapture] = response.body.tee();
    const done = new Response(forCapture).text().then((text) => {
      captured = text;
      capturingFetch.requestBody = init?.body;
    });
    capturingFetch.done = done;
    return new Response(forClient, { status: response.status, headers: response.headers });
  };
  const agent = new HttpAgent({
    url: `${AGUI_BASE}/invocations`,
    threadId: session,
    headers: { [SESSION_HEADER]: session },
    initialMessages: [{ id: randomUUID(), role: "user", content: "hello from AgentCore" }],
    fetch: capturingFetch,
  });
  const events = [];
  try {
    await agent.runAgent(
      { runId: randomUUID(), tools: [], context: [] },
      { onEvent: ({ event }) => events.push(event) },
    );
    await capturingFetch.done;
  } finally {
    console.warn = warn;
    console.error = error;
  }
  assert.deepEqual(warnings, [], "the client warned");
  const types = events.map((event) => event.type);
  assert.equal(types[0], "RUN_STARTED");
  assert.equal(types.at(-1), "RUN_FINISHED");
  assert.equal(events[0].threadId, session);
  const reply = agent.messages.at(-1);
  assert.equal(reply.role, "assistant");
  assert.match(reply.content, /hello from AgentCore/);
  if (CAPTURE_DIR) {
    saveCapture(CAPTURE_DIR, "agentcore-invocations", captured, capturingFetch.requestBody);
  }
  const history = await (await fetch(`${AGUI_BASE}/threads/${session}`)).json();
  assert.equal(history.messages.length, 2, JSON.stringify(history));
});
