// Streams that end before their run, as the real clients take them: @ag-ui/client 1.0.0's and
// 0.0.59's `runAgent()` must resolve without an error or a warning on the notice that ends the
// stream (after the stream closed what it had open), and the run is then followed to its end
// from `events` after `lastEventId`: what every stream carried of it, together, is one run the
// client's own pipeline (verification included) takes, holding the whole answer.
//
// Environment (each part runs when its server is given):
//   AGUI_CUT_BASE      a server with STREAM_MAX_SECS=1 on aimock: its "[cut] …" answers stream
//                      for about two seconds (a long answer, a long tool call, a long thought)
//   AGUI_HANDOFF_BASE  agui-lambda under the Lambda emulator of tests/api/long_runs.rs, whose
//                      model streams one answer longer than an invocation (AGUI_HANDOFF_ANSWER)
//   CAPTURE_DIR        (optional) each stream as cut-<client>-<case>.sse, and the run followed to
//                      its end as cut-<client>-<case>-followed.sse
//
// Run: cd tests/node && AGUI_CUT_BASE=... node --test cut-streams.test.mjs

import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { HttpAgent as HttpAgent100 } from "@ag-ui/client";
import { HttpAgent as HttpAgent0059 } from "client-0059";
import { saveCapture } from "./capture.mjs";

const CUT_BASE = process.env.AGUI_CUT_BASE;
const HANDOFF_BASE = process.env.AGUI_HANDOFF_BASE;
const CAPTURE_DIR = process.env.CAPTURE_DIR || "";
delete process.env.SUPPRESS_TRANSFORMATION_WARNINGS;

const CLIENTS = [
  { version: "1.0.0", HttpAgent: HttpAgent100 },
  { version: "0.0.59", HttpAgent: HttpAgent0059 },
];
const SEARCH_TOOL = {
  name: "search_local_files",
  description: "Search the user's local files by keyword.",
  parameters: { type: "object", properties: { keyword: { type: "string" } } },
};

// Any console output of a client is a failure: both print what they reject or strip.
const consoleLog = [];
for (const level of ["warn", "error"]) {
  const real = console[level];
  console[level] = (...args) => {
    consoleLog.push(`${level}: ${args.map(String).join(" ")}`);
    real.apply(console, args);
  };
}

/** SSE frames as `{id, event}`, LF framing. */
function frames(text) {
  return text
    .split("\n\n")
    .filter((block) => block.split("\n").some((line) => line.startsWith("data:")))
    .map((block) => {
      const lines = block.split("\n");
      const id = lines.find((line) => line.startsWith("id:"))?.slice(3).trim();
      const data = lines.filter((line) => line.startsWith("data:")).map((line) => line.slice(5).trim());
      return { id, event: JSON.parse(data.join("\n")) };
    });
}

const isNotice = (event) => event.type === "RUN_FINISHED" && event.result?.continues === true;

/** The run's numbered frames from `events` after `lastEventId`, across every notice, to its end. */
async function follow(base, result) {
  const followed = [];
  let pointer = result;
  for (let streams = 0; streams < 60; streams++) {
    const response = await fetch(`${base}${pointer.events}`, {
      headers: { accept: "text/event-stream", "last-event-id": String(pointer.lastEventId) },
    });
    assert.equal(response.status, 200, await response.clone().text());
    const got = frames(await response.text());
    followed.push(...got.filter((frame) => frame.id !== undefined));
    const last = got.at(-1)?.event;
    if (last && isNotice(last)) {
      pointer = last.result;
      continue;
    }
    return followed;
  }
  throw new Error("the run did not end");
}

/** Runs `prompt` through `client` against `base`; what the client and the wire said. */
async function cut(base, client, name, prompt) {
  const threadId = randomUUID();
  let body = "";
  let sent;
  const agent = new client.HttpAgent({
    url: `${base}/agent`,
    threadId,
    initialMessages: [{ id: randomUUID(), role: "user", content: prompt }],
    fetch: async (url, init) => {
      sent = init?.body;
      const response = await fetch(url, init);
      body = await response.text();
      return new Response(body, { status: response.status, headers: response.headers });
    },
  });
  const seen = { finished: [], errors: [], failed: [] };
  const before = consoleLog.length;
  await agent.runAgent(
    { runId: randomUUID(), tools: [SEARCH_TOOL], context: [] },
    {
      onRunFinishedEvent: ({ result }) => seen.finished.push(result),
      onRunErrorEvent: ({ event }) => seen.errors.push(event),
      onRunFailed: ({ error }) => seen.failed.push(error),
    },
  );
  const label = `${client.version} ${name}`;
  assert.deepEqual(seen.failed.map(String), [], `${label}: runAgent reported a failed run`);
  assert.deepEqual(seen.errors, [], `${label}: RUN_ERROR`);
  assert.deepEqual(consoleLog.slice(before), [], `${label}: the client printed warnings or errors`);
  assert.equal(seen.finished.length, 1, `${label}: one RUN_FINISHED`);
  const [result] = seen.finished;
  assert.equal(result.continues, true, `${label}: the stream was not cut: ${JSON.stringify(result)}`);
  saveCapture(CAPTURE_DIR, `cut-${client.version}-${name}`, body, sent);
  return { body, result, sent, label };
}

/** `body` through `client`'s whole pipeline (verification included), as if one response
 * carried it: the messages the client then holds. */
async function replay(client, threadId, body, label) {
  const agent = new client.HttpAgent({
    url: "http://replay.invalid/agent",
    threadId,
    fetch: async () => new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } }),
  });
  const failed = [];
  const before = consoleLog.length;
  await agent.runAgent({ runId: randomUUID() }, { onRunFailed: ({ error }) => failed.push(error) });
  assert.deepEqual(failed.map(String), [], `${label}: the client rejects the run followed to its end`);
  assert.deepEqual(consoleLog.slice(before), [], `${label}: the client warned about the run followed to its end`);
  return agent.messages;
}

/** The run as every stream carried it: one run the client's own pipeline accepts. */
async function followed(base, client, name, { body, result, sent, label }) {
  const wire = frames(body);
  const cutAt = wire.findIndex((frame) => frame.id === undefined);
  const closings = wire.slice(cutAt, -1).map((frame) => frame.event);
  for (const closing of closings) {
    assert.equal(closing.metadata?.["agui-lambda"]?.continues?.lastEventId, result.lastEventId, `${label}: ${JSON.stringify(closing)}`);
  }
  const rest = await follow(base, result);
  const run = [...wire.slice(0, cutAt), ...rest];
  assert.deepEqual(
    run.map((frame) => frame.id),
    run.map((_, index) => String(index + 1)),
    `${label}: event ids without gaps or repeats`,
  );
  const events = run.map((frame) => frame.event);
  assert.ok(["RUN_FINISHED", "RUN_ERROR"].includes(events.at(-1).type));
  assert.ok(!isNotice(events.at(-1)), `${label}: the run's own end`);
  const followedBody = run.map((frame) => `id: ${frame.id}\ndata: ${JSON.stringify(frame.event)}\n\n`).join("");
  saveCapture(CAPTURE_DIR, `cut-${client.version}-${name}-followed`, followedBody, sent);
  const messages = await replay(client, events[0].threadId, followedBody, label);
  return { closings, events, messages };
}

const texts = (events, kind) =>
  events.filter((event) => event.type === kind).map((event) => event.delta).join("");
/** The assistant's text, as the client holds it. */
const answer = (messages) =>
  messages.filter((message) => message.role === "assistant").map((message) => message.content ?? "").join("");

describe("streams cut by STREAM_MAX_SECS", { skip: CUT_BASE ? false : "AGUI_CUT_BASE is not set" }, () => {
  for (const client of CLIENTS) {
    test(`${client.version}: a long answer`, async () => {
      const got = await cut(CUT_BASE, client, "answer", "[cut] a long answer");
      const { closings, messages } = await followed(CUT_BASE, client, "answer", got);
      assert.deepEqual(closings.map((event) => event.type), ["TEXT_MESSAGE_END", "STEP_FINISHED"]);
      assert.match(answer(messages), /^Once upon a time .* It never lost a word\.$/);
    });

    test(`${client.version}: a long tool call`, async () => {
      const got = await cut(CUT_BASE, client, "tool-call", "[cut] a long tool call");
      const { closings, events, messages } = await followed(CUT_BASE, client, "tool-call", got);
      assert.ok(closings.some((event) => event.type === "TOOL_CALL_END"), JSON.stringify(closings));
      const call = messages.flatMap((message) => message.toolCalls ?? []).at(-1);
      assert.match(JSON.parse(call.function.arguments).keyword, /^(quarterly report ){15}quarterly report$/);
      assert.equal(events.at(-1).type, "RUN_FINISHED");
    });

    test(`${client.version}: a long thought`, async () => {
      const got = await cut(CUT_BASE, client, "reasoning", "[cut] a long thought");
      const { closings, events, messages } = await followed(CUT_BASE, client, "reasoning", got);
      assert.deepEqual(
        closings.map((event) => event.type),
        ["REASONING_MESSAGE_END", "REASONING_END", "STEP_FINISHED"],
      );
      assert.match(texts(events, "REASONING_MESSAGE_CONTENT"), /^First I list .* before the run\.$/);
      assert.equal(answer(messages), "The answer is 42.");
    });
  }
});

describe("a Lambda hand-off inside a long step", { skip: HANDOFF_BASE ? false : "AGUI_HANDOFF_BASE is not set" }, () => {
  for (const client of CLIENTS) {
    test(`${client.version}: the invocation ends while the model is answering`, async () => {
      const got = await cut(HANDOFF_BASE, client, "handoff", `${client.version}: tell the long story`);
      const { closings, events, messages } = await followed(HANDOFF_BASE, client, "handoff", got);
      assert.ok(closings.length > 0 || got.body.includes('"type":"TEXT_MESSAGE_END"'), "the cut message was closed");
      assert.equal(events.at(-1).type, "RUN_FINISHED");
      assert.ok(answer(messages).includes(process.env.AGUI_HANDOFF_ANSWER ?? ""), answer(messages));
    });
  }
});
