// The v1 agent API end to end against a running function: a detached run through
// POST /api/v1/agent/runs (TaskAcceptedResponse at once), its events followed by run id, then
// the History API by day. Under `cargo lambda watch` the run goes by the function invoking itself
// (SELF_INVOKE_ENDPOINT points at the emulator's Invoke API); on the local server, a task.
//
// Environment:
//   AGUI_BASE   (required) the function's base URL, e.g. http://127.0.0.1:9000/lambda-url/agui-lambda
//   CAPTURE_DIR (optional) the events stream is saved there as v1-agent-<n>.sse
//
// Run: cd tests/node && AGUI_BASE=... node --test v1-agent.test.mjs

import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";

const BASE = process.env.AGUI_BASE;
const CAPTURE_DIR = process.env.CAPTURE_DIR || "";
assert.ok(BASE, "AGUI_BASE must name the function's base URL");

function dataEvents(text) {
  return text
    .split("\n\n")
    .flatMap((frame) => frame.split("\n").filter((line) => line.startsWith("data: ")))
    .map((line) => JSON.parse(line.slice(6)));
}

test("a detached run: accepted at once, followed by run id, read back by day", async () => {
  const threadId = randomUUID();
  const runId = `run-${randomUUID()}`;
  const accepted = await fetch(`${BASE}/api/v1/agent/runs`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      threadId,
      runId,
      state: {},
      messages: [{ id: "msg-001", role: "user", content: "hello" }],
      tools: [],
      context: [],
      forwardedProps: { agent_type: "worker" },
    }),
  });
  assert.equal(accepted.status, 202, await accepted.clone().text());
  assert.deepEqual(await accepted.json(), { taskId: runId, threadId, runId, created: true });

  const followed = await fetch(`${BASE}/api/v1/agent/runs/${runId}/events`, {
    headers: { accept: "text/event-stream" },
  });
  const text = await followed.text();
  assert.equal(followed.status, 200, text);
  if (CAPTURE_DIR) {
    mkdirSync(CAPTURE_DIR, { recursive: true });
    writeFileSync(path.join(CAPTURE_DIR, `v1-agent-${runId}.sse`), text);
  }
  const events = dataEvents(text);
  assert.equal(events[0].type, "RUN_STARTED");
  assert.equal(events.at(-1).type, "RUN_FINISHED", text);
  const answer = events
    .filter((event) => event.type === "TEXT_MESSAGE_CONTENT")
    .map((event) => event.delta)
    .join("");
  assert.equal(answer, "Hello! How can I help you today?");

  const history = await fetch(`${BASE}/api/v1/agent/history?threadId=${threadId}`);
  assert.equal(history.status, 200);
  const day = await history.json();
  assert.equal(day.scope, "history_day");
  assert.equal(day.threadId, threadId);
  assert.equal(day.day, new Date().toISOString().slice(0, 10));
  assert.equal(day.hasMore, false);
  assert.deepEqual(
    day.messages.map((m) => [m.seq, m.role, m.content]),
    [
      [1, "user", "hello"],
      [2, "assistant", answer],
    ],
  );
  assert.deepEqual(day.messages[0].attachments, []);
  assert.equal(day.messages[1].ui_schema, null);
  assert.match(day.messages[0].timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
});
