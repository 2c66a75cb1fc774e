// A run longer than its Lambda invocations, as the two clients see it: agui-lambda under the
// Lambda emulator of its Rust test suite, which starts it and sets AGUI_HANDOFF_BASE (the Rust
// test `wire_a_forty_step_run_outlasts_four_invocations_and_both_clients_follow_it`, which then
// checks the store). Skipped without it.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { HttpAgent } from "@ag-ui/client";
import { ResumableHttpAgent } from "../dist/index.js";

const BASE = process.env.AGUI_HANDOFF_BASE;
const STEPS = Number(process.env.AGUI_HANDOFF_STEPS ?? 40);
const skip = BASE ? false : "AGUI_HANDOFF_BASE is not set (the Rust test suite's Lambda emulator sets it)";

async function thread(id) {
  const response = await fetch(`${BASE}/threads/${encodeURIComponent(id)}?limit=500`);
  assert.equal(response.status, 200);
  return response.json();
}

/** The thread once its run has ended (`activeRunId` null). */
async function finishedThread(id, withinMs) {
  const giveUp = Date.now() + withinMs;
  for (;;) {
    const current = await thread(id);
    if (current.activeRunId === null) return current;
    assert.ok(Date.now() < giveUp, `the run on ${id} did not end`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

const tools = (messages) => messages.filter((message) => message.role === "tool");
const lastAnswer = (messages) => messages.filter((message) => message.role === "assistant").at(-1)?.content;

describe("a run that outlasts its invocations", { concurrency: 2 }, () => {
  test("ResumableHttpAgent follows it across every hand-off as one seamless run", { skip }, async () => {
    const threadId = process.env.AGUI_HANDOFF_THREAD_RESUMABLE ?? "handoff-resumable";
    const frames = [];
    const agent = new ResumableHttpAgent({
      url: `${BASE}/agent`,
      threadId,
      // Followers reconnect after each notice at once; a cut (an environment killed) backs off.
      reconnect: { maxRetries: 8, initialDelayMs: 200, maxDelayMs: 2000 },
      onFrame: (frame) => frames.push(frame),
    });
    agent.messages = [{ id: "u-resumable", role: "user", content: "resumable: work through the steps" }];
    const failed = [];
    await agent.runAgent({ runId: "r-resumable" }, { onRunFailed: ({ error }) => failed.push(error) });
    assert.deepEqual(failed, []);
    const types = frames.map((frame) => frame.event.type);
    assert.equal(types.filter((type) => type === "RUN_STARTED").length, 1);
    assert.equal(types.filter((type) => type === "RUN_FINISHED").length, 1);
    assert.equal(types.at(-1), "RUN_FINISHED");
    assert.ok(!types.includes("RUN_ERROR"), types.join(","));
    assert.deepEqual(
      frames.map((frame) => frame.id),
      frames.map((_, index) => String(index + 1)),
      "event ids without gaps or repeats",
    );
    assert.ok(agent.activeRun.continuations >= 1, `continuations: ${agent.activeRun.continuations}`);
    assert.equal(tools(agent.messages).length, STEPS);
    assert.equal(lastAnswer(agent.messages), "All steps done.");
    // What the client holds is what the thread holds.
    const stored = await thread(threadId);
    assert.deepEqual(
      agent.messages.map((message) => [message.id, message.role, message.content ?? null]),
      stored.messages.map((message) => [message.id, message.role, message.content ?? null]),
    );
  });

  test("@ag-ui/client 1.0.0's HttpAgent gets a clean terminal event, then the finished thread", { skip }, async () => {
    const threadId = process.env.AGUI_HANDOFF_THREAD_PLAIN ?? "handoff-plain";
    const agent = new HttpAgent({ url: `${BASE}/agent`, threadId });
    agent.messages = [{ id: "u-plain", role: "user", content: "plain: work through the steps" }];
    const finished = [];
    const errors = [];
    const failed = [];
    await agent.runAgent(
      { runId: "r-plain" },
      {
        onRunFinishedEvent: ({ result }) => finished.push(result),
        onRunErrorEvent: ({ event }) => errors.push(event),
        onRunFailed: ({ error }) => failed.push(error),
      },
    );
    assert.deepEqual(failed, [], "not a failed run");
    assert.deepEqual(errors, []);
    assert.equal(finished.length, 1);
    const [result] = finished;
    assert.equal(result.continues, true, JSON.stringify(result));
    assert.equal(result.runId, "r-plain");
    assert.equal(result.events, `/threads/${threadId}/runs/r-plain/events`);
    assert.equal(typeof result.lastEventId, "number");
    // The run goes on without the client; the thread shows its result once it is done.
    assert.ok(tools(agent.messages).length < STEPS, "the stream ended before the run");
    const done = await finishedThread(threadId, 150_000);
    assert.equal(tools(done.messages).length, STEPS);
    assert.equal(lastAnswer(done.messages), "All steps done.");
  });
});
