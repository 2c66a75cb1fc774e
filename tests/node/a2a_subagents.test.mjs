// Two agui-lambda processes: A's coordinator delegates to B over A2A 1.0 (B's agent card, B's
// JSON-RPC binding), and B's get_current_time needs approval. @ag-ui/client 1.0.0 (verifyEvents
// on, no console output allowed) sees the child's work between SUBAGENT_STARTED and
// SUBAGENT_FINISHED, B's approval as A's interrupt, answers it, and A resumes B's task (same
// taskId and contextId): B's tokens are counted in A's usage, run by run.
//
// Environment:
//   AGUI_BASE      (required) A: the coordinator, whose sub-agent clock_agent is B by its card
//   A2A_PEER_BASE  (required) B: an agui-lambda with APPROVAL_REQUIRED_TOOLS=get_current_time
//
// Run: cd tests/node && AGUI_BASE=... A2A_PEER_BASE=... node --test a2a_subagents.test.mjs

import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { HttpAgent } from "@ag-ui/client";
import { EventSchemas } from "@ag-ui/core/schemas";

const BASE = process.env.AGUI_BASE;
const PEER_BASE = process.env.A2A_PEER_BASE;
delete process.env.SUPPRESS_TRANSFORMATION_WARNINGS;

const consoleLog = [];
for (const level of ["warn", "error"]) {
  const real = console[level];
  console[level] = (...args) => {
    consoleLog.push(`${level}: ${args.map(String).join(" ")}`);
    real.apply(console, args);
  };
}

const ofType = (events, type) => events.filter((e) => e.type === type);
const textBy = (events, subagentRunId) =>
  ofType(events, "TEXT_MESSAGE_CONTENT").filter((e) => e.subagentRunId === subagentRunId).map((e) => e.delta).join("");
const tokensOf = (end, model) =>
  (end.usage ?? []).filter((u) => u.model === model).reduce((sum, u) => sum + u.totalTokens, 0);

async function run(agent, params = {}) {
  const events = [];
  const before = consoleLog.length;
  await agent.runAgent(
    { runId: randomUUID(), tools: [], context: [], ...params },
    { onEvent: ({ event }) => events.push(structuredClone(event)) },
  );
  assert.deepEqual(consoleLog.slice(before), [], "the client printed warnings");
  for (const event of events) assert.deepEqual(EventSchemas.parse(event), event, `${event.type} has a field outside the 1.0 schema`);
  assert.equal(events.at(-1).type, "RUN_FINISHED", events.map((e) => e.type).join(" "));
  return events;
}

async function peerTask(taskId) {
  const response = await fetch(`${PEER_BASE}/a2a`, {
    method: "POST",
    headers: { "content-type": "application/json", "A2A-Version": "1.0" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: taskId } }),
  });
  const answer = await response.json();
  assert.ok(answer.result, JSON.stringify(answer));
  return answer.result;
}

test("A delegates to B over A2A; B's approval is answered from the client and B's task resumes", async () => {
  const agent = new HttpAgent({
    url: `${BASE}/agent`,
    threadId: randomUUID(),
    initialMessages: [{ id: randomUUID(), role: "user", content: "[a2a-remote] ask the clock" }],
  });
  const first = await run(agent);
  const [started] = ofType(first, "SUBAGENT_STARTED");
  assert.equal(started.name, "clock_agent");
  assert.equal(started.parentToolCallId, "call_a2a_clock");
  // B's words before it asked, as the child's text.
  assert.equal(textBy(first, started.subagentRunId), "Let me check the time.");
  const [suspended] = ofType(first, "SUBAGENT_FINISHED");
  assert.equal(suspended.subagentRunId, started.subagentRunId);
  assert.equal(suspended.outcome.type, "suspended");
  const end = first.at(-1);
  assert.equal(end.outcome.type, "interrupt");
  const [interrupt] = end.outcome.interrupts;
  assert.equal(interrupt.subagentRunId, started.subagentRunId);
  assert.equal(interrupt.reason, "input_required");
  assert.match(interrupt.message, /get_current_time/);
  // B's approval schema is the answer's.
  assert.deepEqual(interrupt.responseSchema.required, ["approved"]);
  const { taskId, contextId, state } = interrupt.metadata["agui-lambda"].a2a;
  assert.equal(state, "TASK_STATE_INPUT_REQUIRED");
  assert.equal((await peerTask(taskId)).status.state, "TASK_STATE_INPUT_REQUIRED");
  // B's first run's tokens are in A's usage already.
  assert.equal(tokensOf(end, "remote-model"), 42, JSON.stringify(end.usage));
  assert.ok(tokensOf(end, "coordinator-model") > 0);
  assert.equal(agent.pendingInterrupts.length, 1);

  const second = await run(agent, { resume: [{ interruptId: interrupt.id, status: "resolved", payload: { approved: true } }] });
  const [continued] = ofType(second, "SUBAGENT_STARTED");
  assert.equal(continued.subagentRunId, started.subagentRunId, "the same invocation continues");
  assert.equal(textBy(second, started.subagentRunId), "It is now the time shown in Paris.");
  const [finished] = ofType(second, "SUBAGENT_FINISHED");
  assert.equal(finished.outcome.type, "success");
  assert.equal(finished.result, "It is now the time shown in Paris.");
  const result = agent.messages.find((m) => m.role === "tool" && m.toolCallId === "call_a2a_clock");
  assert.equal(result.content, "It is now the time shown in Paris.");
  assert.equal(agent.messages.at(-1).content, "Coordinator: the clock agent says it is time in Paris.");
  assert.deepEqual(agent.pendingInterrupts, []);
  // The same task finished on B, in the same context; its resumed run's tokens counted in A's.
  const task = await peerTask(taskId);
  assert.equal(task.status.state, "TASK_STATE_COMPLETED");
  assert.equal(task.contextId, contextId);
  assert.equal(tokensOf(second.at(-1), "remote-model"), 49, JSON.stringify(second.at(-1).usage));
  const link = (await (await fetch(`${BASE}/threads/${agent.threadId}`)).json()).messages.find(
    (m) => m.role === "tool" && m.toolCallId === "call_a2a_clock",
  ).metadata["agui-lambda"].subagent;
  assert.equal(link.kind, "a2a");
  assert.equal(link.taskId, taskId);
  assert.equal(link.contextId, contextId);
});
