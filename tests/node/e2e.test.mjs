// End-to-end tests of agui-lambda with the real AG-UI TypeScript clients.
//
// Each scenario of tests/fixtures/SCENARIOS.md is run through `HttpAgent.runAgent()` of
// @ag-ui/client 1.0.0 and of 0.0.59 (the version CopilotKit pins), and checked the way a
// user of those clients would check it: the text that arrives, the tool calls, the
// messages the agent holds afterwards, the run lifecycle, and that the client printed no
// warning or error (the 1.0 client strips unknown material with a console.warn; both log
// "Agent execution failed" with console.error when they reject a stream).
//
// Environment:
//   AGUI_URL          (required) endpoint that takes RunAgentInput POSTs, e.g. http://127.0.0.1:8787/agent
//   CAPTURE_DIR       (optional) every raw response body is saved there as <version>-<scenario>-<n>.sse
//   E2E_RUN_TIMEOUT_MS (optional) per-run limit, default 60000
//   E2E_SEQUENTIAL    (optional) set to 1 when the server answers one request at a time
//                     (`cargo lambda watch` with one instance): double-texting needs two at once
//
// Run: cd tests/node && npm ci && AGUI_URL=... node --test --test-concurrency=1 e2e.test.mjs

import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { HttpAgent as HttpAgent100 } from "@ag-ui/client";
import { HttpAgent as HttpAgent0059 } from "client-0059";
import { saveCapture } from "./capture.mjs";

const AGUI_URL = process.env.AGUI_URL;
const CAPTURE_DIR = process.env.CAPTURE_DIR || "";
const RUN_TIMEOUT_MS = Number(process.env.E2E_RUN_TIMEOUT_MS || 60000);

// The 1.0 client silences its own deviation warnings when this is set; the whole point
// here is to see them.
delete process.env.SUPPRESS_TRANSFORMATION_WARNINGS;

const CLIENTS = [
  { version: "1.0.0", HttpAgent: HttpAgent100 },
  { version: "0.0.59", HttpAgent: HttpAgent0059 },
];

// Frontend tools the application offers (sent on every run, as CopilotKit does).
const FRONTEND_TOOLS = [
  {
    name: "search_local_files",
    description: "Search the user's local files by keyword.",
    parameters: { type: "object", properties: { keyword: { type: "string" } } },
  },
  {
    name: "confirmAction",
    description: "Ask the user to confirm an action before it is carried out.",
    parameters: {
      type: "object",
      properties: { action: { type: "string" }, count: { type: "number" } },
      required: ["action"],
    },
  },
];

const TERMINAL = new Set(["RUN_FINISHED", "RUN_ERROR"]);

// ---------------------------------------------------------------------------------------
// console.warn / console.error collection: any output from the client is a failure.

const consoleLog = [];
const realWarn = console.warn;
const realError = console.error;
function installConsoleTrap() {
  console.warn = (...args) => {
    consoleLog.push({ level: "warn", text: args.map(String).join(" ") });
    realWarn.apply(console, args);
  };
  console.error = (...args) => {
    consoleLog.push({ level: "error", text: args.map(String).join(" ") });
    realError.apply(console, args);
  };
}
function removeConsoleTrap() {
  console.warn = realWarn;
  console.error = realError;
}

// ---------------------------------------------------------------------------------------
// A fetch for HttpAgent that tees every response body: one branch goes to the client
// untouched, the other is kept (and written to CAPTURE_DIR) for wire-level checks.

function capturingFetch(captures) {
  return async (url, init) => {
    const response = await fetch(url, init);
    const record = {
      status: response.status,
      contentType: response.headers.get("content-type") || "",
      requestBody: typeof init?.body === "string" ? init.body : undefined,
      bytes: undefined,
      done: undefined,
    };
    captures.push(record);
    if (!response.body) {
      record.bytes = new Uint8Array();
      record.done = Promise.resolve();
      return response;
    }
    const [forClient, forCapture] = response.body.tee();
    const chunks = [];
    record.partial = () => Buffer.concat(chunks);
    record.done = (async () => {
      const reader = forCapture.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        chunks.push(value);
      }
      record.bytes = Buffer.concat(chunks);
    })();
    record.done.catch(() => {}); // observed in Session.run; avoid an unhandled rejection meanwhile
    return new Response(forClient, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

function withTimeout(promise, ms, what, onTimeout) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => {
      onTimeout?.();
      reject(new Error(`${what}: no end after ${ms} ms (the run hung)`));
    }, ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// Parses an SSE body the way both TS clients do (LF framing, data: lines joined).
function parseSse(text) {
  const events = [];
  for (const block of text.split("\n\n")) {
    const data = block
      .split("\n")
      .filter((line) => line.startsWith("data:"))
      .map((line) => line.slice(5).replace(/^ /, ""));
    if (data.length) events.push(JSON.parse(data.join("\n")));
  }
  return events;
}

// The `id:` of each event frame, in order (undefined where a frame has none).
function sseIds(text) {
  return text
    .split("\n\n")
    .filter((block) => block.split("\n").some((line) => line.startsWith("data:")))
    .map((block) => block.split("\n").find((line) => line.startsWith("id:"))?.slice(3).trim());
}

// ---------------------------------------------------------------------------------------
// One scenario = one agent (one thread) and one or more runs on it.

class Session {
  constructor(client, scenario, userText) {
    this.client = client;
    this.scenario = scenario;
    this.threadId = randomUUID();
    this.captures = [];
    this.runCount = 0;
    this.agent = new client.HttpAgent({
      url: AGUI_URL,
      threadId: this.threadId,
      initialMessages: [{ id: randomUUID(), role: "user", content: userText }],
      fetch: capturingFetch(this.captures),
    });
  }

  // Runs the agent once; returns what a user of the client sees.
  async run() {
    this.runCount += 1;
    const n = this.runCount;
    const runId = randomUUID();
    const knownIds = new Set(this.agent.messages.map((m) => m.id));
    const seen = { threadId: this.threadId, runId, knownIds, events: [], runErrors: [], failures: [], outcome: undefined };
    const subscriber = {
      onEvent: ({ event }) => {
        seen.events.push(structuredClone(event));
      },
      onRunErrorEvent: ({ event }) => {
        seen.runErrors.push(event);
      },
      onRunFailed: ({ error }) => {
        seen.failures.push(error);
      },
    };
    const capturesBefore = this.captures.length;
    const consoleBefore = consoleLog.length;
    const label = `${this.client.version} ${this.scenario} run ${n}`;
    try {
      seen.result = await withTimeout(
        this.agent.runAgent({ runId, tools: FRONTEND_TOOLS, context: [] }, subscriber),
        RUN_TIMEOUT_MS,
        label,
        () => this.agent.abortRun(),
      );
      seen.outcome = "resolved";
    } catch (error) {
      seen.outcome = "rejected";
      seen.error = error;
    }
    // The capture branch ends with the body; a server that never ends it is a hang too.
    const capture = this.captures[capturesBefore];
    if (capture) {
      try {
        await withTimeout(capture.done, RUN_TIMEOUT_MS, `${label} (response body)`);
      } catch (error) {
        seen.captureError = error;
        capture.bytes = capture.partial?.() ?? new Uint8Array();
      }
      seen.capture = capture;
      saveCapture(CAPTURE_DIR, `${this.client.version}-${this.scenario}-${n}`, capture.bytes, capture.requestBody);
    }
    seen.console = consoleLog.slice(consoleBefore);
    seen.label = label;
    return seen;
  }

  addToolResult(toolCallId, content) {
    this.agent.addMessage({ id: randomUUID(), role: "tool", toolCallId, content });
  }

  addUserMessage(content) {
    this.agent.addMessage({ id: randomUUID(), role: "user", content });
  }
}

// ---------------------------------------------------------------------------------------
// Assertions shared by every run.

function assertCleanConsole(seen) {
  assert.deepEqual(
    seen.console,
    [],
    `${seen.label}: the client printed warnings/errors:\n` +
      seen.console.map((c) => `  console.${c.level}: ${c.text}`).join("\n"),
  );
}

function assertWire(seen, expectedTerminal) {
  const c = seen.capture;
  assert.ok(c, `${seen.label}: no HTTP response was captured`);
  assert.ok(!seen.captureError, `${seen.label}: reading the response body failed: ${seen.captureError}`);
  assert.equal(c.status, 200, `${seen.label}: HTTP status ${c.status}`);
  assert.match(c.contentType, /^text\/event-stream\b/, `${seen.label}: content-type '${c.contentType}'`);
  const text = Buffer.from(c.bytes).toString("utf8");
  assert.ok(!text.includes("\r"), `${seen.label}: the stream contains CR characters (clients need LF-only SSE)`);
  const wire = parseSse(text);
  assert.ok(wire.length > 0, `${seen.label}: empty event stream`);
  // Every event frame carries its place in the run as the SSE id, for Last-Event-ID resumes.
  const ids = sseIds(text);
  assert.deepEqual(ids, wire.map((_, i) => String(i + 1)), `${seen.label}: SSE ids are 1..n`);
  assert.equal(wire[0].type, "RUN_STARTED", `${seen.label}: first event on the wire is ${wire[0].type}`);
  assert.equal(wire.filter((e) => e.type === "RUN_STARTED").length, 1, `${seen.label}: RUN_STARTED count on the wire`);
  const terminals = wire.filter((e) => TERMINAL.has(e.type));
  assert.equal(
    terminals.length,
    1,
    `${seen.label}: expected exactly one terminal event on the wire, got ${terminals.map((e) => e.type).join(",") || "none"}`,
  );
  assert.equal(wire.at(-1).type, expectedTerminal, `${seen.label}: last event on the wire is ${wire.at(-1).type}`);
  for (const e of wire) {
    if (e.timestamp !== undefined) {
      assert.ok(Number.isSafeInteger(e.timestamp), `${seen.label}: ${e.type}.timestamp is not an integer: ${e.timestamp}`);
    }
    for (const [k, v] of Object.entries(e)) {
      assert.notEqual(v, null, `${seen.label}: ${e.type}.${k} is null (omit absent fields)`);
    }
  }
  // What went out: the request the client posted.
  const input = JSON.parse(c.requestBody);
  assert.equal(input.threadId, seen.threadId);
  assert.equal(input.runId, seen.runId);
  seen.wire = wire;
}

// Lifecycle as the client delivered it to subscribers.
function assertLifecycle(seen, expectedTerminal) {
  const types = seen.events.map((e) => e.type);
  assert.equal(types[0], "RUN_STARTED", `${seen.label}: first event seen by the client is ${types[0]} (${types.join(",")})`);
  assert.equal(types.filter((t) => t === "RUN_STARTED").length, 1, `${seen.label}: RUN_STARTED count`);
  const terminals = types.filter((t) => TERMINAL.has(t));
  assert.deepEqual(terminals, [expectedTerminal], `${seen.label}: terminal events seen: ${types.join(",")}`);
  assert.equal(types.at(-1), expectedTerminal, `${seen.label}: last event is ${types.at(-1)}`);
  const started = seen.events[0];
  assert.equal(started.threadId, seen.threadId, `${seen.label}: RUN_STARTED.threadId`);
  assert.equal(started.runId, seen.runId, `${seen.label}: RUN_STARTED.runId`);
  if (expectedTerminal === "RUN_FINISHED") {
    const fin = seen.events.at(-1);
    assert.equal(fin.threadId, seen.threadId, `${seen.label}: RUN_FINISHED.threadId`);
    assert.equal(fin.runId, seen.runId, `${seen.label}: RUN_FINISHED.runId`);
  }
  // Same number of events on the wire and in the client: nothing dropped or invented.
  if (seen.wire) {
    assert.deepEqual(types, seen.wire.map((e) => e.type), `${seen.label}: client saw a different event sequence than the wire`);
  }
}

function assertSucceeded(seen) {
  assert.equal(
    seen.outcome,
    "resolved",
    `${seen.label}: runAgent rejected: ${seen.error?.stack || seen.error}`,
  );
  assert.deepEqual(seen.failures.map(String), [], `${seen.label}: onRunFailed was called`);
  assert.deepEqual(seen.runErrors, [], `${seen.label}: RUN_ERROR received`);
  assertCleanConsole(seen);
  assertWire(seen, "RUN_FINISHED");
  assertLifecycle(seen, "RUN_FINISHED");
}

// Texts of this run, in order, from the events (one entry per text message).
function textsOf(seen) {
  const byId = new Map();
  for (const e of seen.events) {
    if (e.type === "TEXT_MESSAGE_START") {
      assert.ok(!byId.has(e.messageId), `${seen.label}: text message id ${e.messageId} reopened`);
      assert.ok(e.role === undefined || e.role === "assistant", `${seen.label}: text message role ${e.role}`);
      byId.set(e.messageId, "");
    }
    if (e.type === "TEXT_MESSAGE_CONTENT") byId.set(e.messageId, byId.get(e.messageId) + e.delta);
  }
  return [...byId.entries()].map(([id, text]) => ({ id, text }));
}

function toolCallsOf(seen) {
  const calls = new Map();
  for (const e of seen.events) {
    if (e.type === "TOOL_CALL_START") {
      calls.set(e.toolCallId, { id: e.toolCallId, name: e.toolCallName, parentMessageId: e.parentMessageId, args: "", ended: false });
    }
    if (e.type === "TOOL_CALL_ARGS") calls.get(e.toolCallId).args += e.delta;
    if (e.type === "TOOL_CALL_END") calls.get(e.toolCallId).ended = true;
  }
  return [...calls.values()];
}

function toolResultsOf(seen) {
  return seen.events.filter((e) => e.type === "TOOL_CALL_RESULT");
}

// Messages this run added to the agent.
function newMessages(session, seen) {
  return session.agent.messages.filter((m) => !seen.knownIds.has(m.id));
}

function assistantWithCall(messages, toolCallId) {
  return messages.find((m) => m.role === "assistant" && m.toolCalls?.some((tc) => tc.id === toolCallId));
}

// ---------------------------------------------------------------------------------------

if (!AGUI_URL) {
  test("AGUI_URL is set", () => {
    assert.fail(
      "AGUI_URL is not set. Start agui-lambda (with aimock as its model) and run e.g.\n" +
        "  AGUI_URL=http://127.0.0.1:8787/agent node --test e2e.test.mjs",
    );
  });
} else {
  before(installConsoleTrap);
  after(removeConsoleTrap);


  // Frames must reach the client as the model produces them, not when the run ends: under
  // `cargo lambda watch` (and Lambda) a buffering mistake shows up as every frame arriving at
  // once. The "stream slowly" fixture spaces its ten chunks 150 ms apart.
  test("streaming: frames arrive incrementally", async () => {
    const body = {
      threadId: randomUUID(), runId: randomUUID(), state: {}, tools: [], context: [], forwardedProps: {},
      messages: [{ id: randomUUID(), role: "user", content: "stream slowly" }],
    };
    const started = Date.now();
    const response = await fetch(AGUI_URL, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify(body),
    });
    assert.equal(response.status, 200);
    const arrivals = [];
    const decoder = new TextDecoder();
    let text = "";
    for await (const chunk of response.body) {
      const piece = decoder.decode(chunk, { stream: true });
      text += piece;
      const frames = (piece.match(/TEXT_MESSAGE_CONTENT/g) || []).length;
      for (let i = 0; i < frames; i++) arrivals.push(Date.now() - started);
    }
    assert.ok(text.includes("RUN_FINISHED"), text);
    assert.ok(arrivals.length >= 5, `content frames: ${arrivals.length}`);
    const spread = arrivals.at(-1) - arrivals[0];
    // Ten chunks 150 ms apart span about 1.35 s; a buffered stream would span ~0.
    assert.ok(spread >= 600, `content frames arrived within ${spread} ms: ${arrivals.join(",")}`);
  });


  // ---------------------------------------------------------------------------------------
  // The run lifecycle: a run outlives its connection; a new run on a busy thread interrupts
  // the active one (the default) or is refused (reject).
  const BASE = AGUI_URL.replace(/\/agent\/?$/, "");
  const SLOW_REPLY = "One, two, three, four, five, six, seven, eight, nine, ten.";

  async function threadOf(threadId) {
    const response = await fetch(`${BASE}/threads/${threadId}`);
    assert.equal(response.status, 200, `GET /threads/${threadId}`);
    return response.json();
  }

  async function waitIdle(threadId, ms) {
    const until = Date.now() + ms;
    for (;;) {
      const thread = await threadOf(threadId);
      if (thread.activeRunId === null) return thread;
      assert.ok(Date.now() < until, `thread ${threadId} still runs ${thread.activeRunId}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async function eventually(condition, ms, what) {
    const until = Date.now() + ms;
    while (!condition()) {
      assert.ok(Date.now() < until, `timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  // A body over the limit is read to its end before the 413, so a client still sending gets the
  // answer instead of EPIPE.
  test("limits: Node's fetch reads the 413 of a 10 MB body, ten times out of ten", async () => {
    const big = JSON.stringify({ threadId: randomUUID(), runId: randomUUID(), messages: [], padding: "x".repeat(10 * 1024 * 1024) });
    for (let i = 0; i < 10; i++) {
      const response = await fetch(AGUI_URL, { method: "POST", headers: { "content-type": "application/json" }, body: big });
      assert.equal(response.status, 413, `attempt ${i + 1}`);
      assert.equal((await response.json()).error.code, "payload_too_large");
    }
  });

  test("lifecycle: a client that disconnects mid-stream leaves a run that completes and frees the thread", async () => {
    const threadId = randomUUID();
    const controller = new AbortController();
    const body = {
      threadId, runId: randomUUID(), state: {}, tools: [], context: [], forwardedProps: {},
      messages: [{ id: randomUUID(), role: "user", content: "stream slowly" }],
    };
    const response = await fetch(AGUI_URL, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify(body),
      signal: controller.signal,
    });
    assert.equal(response.status, 200);
    const decoder = new TextDecoder();
    let text = "";
    for await (const chunk of response.body) {
      text += decoder.decode(chunk, { stream: true });
      if (text.includes("TEXT_MESSAGE_CONTENT")) break;
    }
    controller.abort();
    assert.ok(!text.includes("RUN_FINISHED"), "the client left before the end");
    const thread = await waitIdle(threadId, 20000);
    assert.deepEqual(
      thread.messages.map((m) => [m.role, m.content]),
      [["user", "stream slowly"], ["assistant", SLOW_REPLY]],
      "the whole answer was stored",
    );
    const next = await fetch(AGUI_URL, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ ...body, runId: randomUUID(), messages: [...thread.messages, { id: randomUUID(), role: "user", content: "hello" }] }),
    });
    assert.equal(next.status, 200);
    const events = parseSse(await next.text());
    assert.equal(events.at(-1).type, "RUN_FINISHED");
  });

  const sequential = process.env.E2E_SEQUENTIAL === "1"
    ? "the server answers one request at a time; the suite runs this against the local server"
    : false;
  for (const client of CLIENTS) {
    test(`lifecycle (${client.version}): double-texting rejects under reject and interrupts by default`, { skip: sequential }, async () => {
      const threadId = randomUUID();
      const first = new client.HttpAgent({
        url: AGUI_URL, threadId,
        initialMessages: [{ id: randomUUID(), role: "user", content: "stream slowly" }],
      });
      const firstEvents = [];
      const firstRun = first.runAgent(
        { runId: randomUUID(), tools: [], context: [] },
        { onEvent: ({ event }) => { firstEvents.push(structuredClone(event)); } },
      );
      await eventually(() => firstEvents.some((e) => e.type === "TEXT_MESSAGE_CONTENT"), 20000, "the first run's text");

      // reject: the second run is refused and the first goes on.
      const refused = await fetch(AGUI_URL, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          threadId, runId: randomUUID(), state: {}, tools: [], context: [],
          forwardedProps: { busy_thread_policy: "reject" },
          messages: [{ id: randomUUID(), role: "user", content: "hello" }],
        }),
      });
      assert.equal(refused.status, 409);
      assert.equal((await refused.json()).error.code, "thread_busy");

      // interrupt (the default): the first run stops, the second runs on the history.
      const second = new client.HttpAgent({
        url: AGUI_URL, threadId,
        initialMessages: [{ id: randomUUID(), role: "user", content: "hello" }],
      });
      const secondEvents = [];
      const consoleBefore = consoleLog.length;
      await withTimeout(
        second.runAgent({ runId: randomUUID(), tools: [], context: [] }, { onEvent: ({ event }) => { secondEvents.push(structuredClone(event)); } }),
        RUN_TIMEOUT_MS, "second run",
      );
      await withTimeout(firstRun, RUN_TIMEOUT_MS, "first run");
      assert.deepEqual(consoleLog.slice(consoleBefore), [], "the clients printed nothing");
      const end = firstEvents.at(-1);
      if (client.version === "1.0.0") {
        assert.equal(end.type, "RUN_FINISHED");
        assert.deepEqual(end.outcome, { type: "cancelled" });
      } else {
        // 0.0.59 has no cancelled outcome: a finished run, the cancel said in our metadata.
        assert.equal(end.type, "RUN_FINISHED");
        assert.equal(end.outcome, undefined);
        assert.equal(end.metadata?.["agui-lambda"]?.outcome, "cancelled");
      }
      assert.equal(secondEvents.at(-1).type, "RUN_FINISHED");
      const partial = firstEvents.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e.delta).join("");
      assert.ok(partial.length > 0 && SLOW_REPLY.startsWith(partial) && partial !== SLOW_REPLY, `partial answer: ${partial}`);
      const thread = await waitIdle(threadId, 5000);
      assert.deepEqual(
        thread.messages.map((m) => [m.role, m.content]),
        [["user", "stream slowly"], ["assistant", partial], ["user", "hello"], ["assistant", "Hello! How can I help you today?"]],
        "the interrupted partial answer is in the history",
      );
    });
  }

  for (const client of CLIENTS) {
    describe(`@ag-ui/client ${client.version}`, () => {
      test("plain: text reply", async () => {
        const s = new Session(client, "plain", "hello");
        const r = await s.run();
        assertSucceeded(r);
        const texts = textsOf(r);
        assert.deepEqual(texts.map((t) => t.text), ["Hello! How can I help you today?"]);
        assert.equal(toolCallsOf(r).length, 0);
        const added = newMessages(s, r);
        assert.deepEqual(
          added.map((m) => ({ role: m.role, content: m.content, toolCalls: m.toolCalls })),
          [{ role: "assistant", content: "Hello! How can I help you today?", toolCalls: undefined }],
        );
      });

      test("server-tool: get_current_time runs in the server", async () => {
        const s = new Session(client, "server-tool", "what time is it in Paris?");
        const r = await s.run();
        assertSucceeded(r);
        const texts = textsOf(r).map((t) => t.text);
        assert.deepEqual(texts, ["Let me check the time.", "It is now the time shown in Paris."]);
        const calls = toolCallsOf(r);
        assert.equal(calls.length, 1, "one tool call");
        const [call] = calls;
        assert.equal(call.name, "get_current_time");
        assert.deepEqual(JSON.parse(call.args), { timezone: "Europe/Paris" });
        assert.ok(call.ended, "TOOL_CALL_END sent");
        const results = toolResultsOf(r);
        assert.equal(results.length, 1, "one TOOL_CALL_RESULT");
        assert.equal(results[0].toolCallId, call.id);
        assert.equal(typeof results[0].content, "string");
        const value = JSON.parse(results[0].content);
        assert.equal(value.timezone, "Europe/Paris");
        assert.match(value.iso, /^\d{4}-\d\d-\d\dT\d\d:\d\d/);
        // The result comes after the call and before the follow-up text.
        const types = r.events.map((e) => e.type);
        assert.ok(types.indexOf("TOOL_CALL_RESULT") > types.indexOf("TOOL_CALL_END"));

        // The agent's history: assistant(text + toolCalls) -> tool -> assistant(text).
        const added = newMessages(s, r);
        const owner = assistantWithCall(added, call.id);
        assert.ok(owner, "the assistant message holds the tool call");
        assert.equal(owner.content, "Let me check the time.", "the tool call is attached to the message whose text preceded it");
        assert.deepEqual(
          owner.toolCalls.map((tc) => ({ type: tc.type, name: tc.function.name, args: JSON.parse(tc.function.arguments) })),
          [{ type: "function", name: "get_current_time", args: { timezone: "Europe/Paris" } }],
        );
        const toolMsg = added.find((m) => m.role === "tool");
        assert.ok(toolMsg, "a tool message was recorded");
        assert.equal(toolMsg.toolCallId, call.id);
        const last = added.at(-1);
        assert.equal(last.role, "assistant");
        assert.equal(last.content, "It is now the time shown in Paris.");
        assert.ok(added.indexOf(owner) < added.indexOf(toolMsg) && added.indexOf(toolMsg) < added.indexOf(last));
      });

      for (const hitl of [false, true]) {
        const scenario = hitl ? "hitl" : "frontend-tool";
        const spec = hitl
          ? {
              say: "please delete the temporary files",
              preText: ["About to delete 15 temporary files."],
              tool: "confirmAction",
              args: { action: "delete temporary files", count: 15 },
              answer: "confirmed",
              reply: "Deleted 15 temporary files.",
            }
          : {
              say: "search my local files for the report",
              preText: [],
              tool: "search_local_files",
              args: { keyword: "report" },
              answer: JSON.stringify({ files: ["annual-report.pdf", "q3-report.docx"] }),
              reply: "I found 2 files: annual-report.pdf and q3-report.docx.",
            };
        test(`${scenario}: run ends at the ${spec.tool} call, the tool result continues it`, async () => {
          const s = new Session(client, scenario, spec.say);

          // Run 1: the model calls the frontend tool; the run stops there.
          const r1 = await s.run();
          assertSucceeded(r1);
          assert.deepEqual(textsOf(r1).map((t) => t.text), spec.preText);
          const calls = toolCallsOf(r1);
          assert.equal(calls.length, 1, "one tool call");
          const [call] = calls;
          assert.equal(call.name, spec.tool);
          assert.deepEqual(JSON.parse(call.args), spec.args);
          assert.ok(call.ended, "TOOL_CALL_END sent");
          assert.equal(toolResultsOf(r1).length, 0, "no TOOL_CALL_RESULT for a frontend tool");
          const types = r1.events.map((e) => e.type);
          assert.equal(types.at(-2), "TOOL_CALL_END", `RUN_FINISHED right after TOOL_CALL_END (got ${types.join(",")})`);
          const fin = r1.events.at(-1);
          assert.ok(fin.outcome === undefined || fin.outcome.type === "success", "run 1 outcome is success");
          // parentMessageId must name a new message of this run (never an older one).
          assert.ok(call.parentMessageId, "TOOL_CALL_START carries parentMessageId");
          assert.ok(!r1.knownIds.has(call.parentMessageId), "parentMessageId names a new message");
          const added1 = newMessages(s, r1);
          const owner = assistantWithCall(added1, call.id);
          assert.ok(owner, "the agent holds a new assistant message with the tool call");
          assert.equal(owner.id, call.parentMessageId);
          if (spec.preText.length) assert.equal(owner.content, spec.preText.join(""));
          assert.deepEqual(
            owner.toolCalls.map((tc) => ({ name: tc.function.name, args: JSON.parse(tc.function.arguments) })),
            [{ name: spec.tool, args: spec.args }],
          );
          assert.equal(s.agent.messages.at(-1).id, owner.id, "the tool-call message is the last one");

          // The application runs the tool and posts the result on the same thread.
          s.addToolResult(call.id, spec.answer);
          const r2 = await s.run();
          assertSucceeded(r2);
          assert.notEqual(r2.runId, r1.runId);
          const sent = JSON.parse(r2.capture.requestBody);
          assert.equal(sent.threadId, s.threadId);
          assert.deepEqual(
            sent.messages.map((m) => m.role),
            ["user", "assistant", "tool"],
            "the continuation carries the full history",
          );
          assert.deepEqual(textsOf(r2).map((t) => t.text), [spec.reply]);
          assert.equal(toolCallsOf(r2).length, 0, "no new tool call after the result");
          const added2 = newMessages(s, r2);
          assert.deepEqual(added2.map((m) => [m.role, m.content]), [["assistant", spec.reply]]);
          assert.deepEqual(
            s.agent.messages.map((m) => m.role),
            ["user", "assistant", "tool", "assistant"],
          );
        });
      }

      test("reasoning: reasoning then text, and the thread goes on", async () => {
        const s = new Session(client, "reasoning", "think step by step: what is the answer?");
        const r = await s.run();
        assertSucceeded(r);
        const types = r.events.map((e) => e.type);
        for (const t of ["REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END", "REASONING_END"]) {
          assert.ok(types.includes(t), `${t} received (${types.join(",")})`);
        }
        assert.ok(types.lastIndexOf("REASONING_END") < types.indexOf("TEXT_MESSAGE_START"), "reasoning closes before the answer");
        const reasoning = r.events
          .filter((e) => e.type === "REASONING_MESSAGE_CONTENT")
          .map((e) => e.delta)
          .join("");
        assert.equal(reasoning, "First I consider the question.");
        assert.deepEqual(textsOf(r).map((t) => t.text), ["The answer is 42."]);
        const added = newMessages(s, r);
        assert.deepEqual(
          added.map((m) => [m.role, m.content]),
          [
            ["reasoning", "First I consider the question."],
            ["assistant", "The answer is 42."],
          ],
        );

        // Next turn: the client sends the reasoning message back in the history.
        s.addUserMessage("hello");
        const r2 = await s.run();
        assertSucceeded(r2);
        const sent = JSON.parse(r2.capture.requestBody);
        assert.deepEqual(sent.messages.map((m) => m.role), ["user", "reasoning", "assistant", "user"]);
        assert.deepEqual(textsOf(r2).map((t) => t.text), ["Hello! How can I help you today?"]);
      });

      test("rate-limit: the run fails with RUN_ERROR and the client reports it", async () => {
        const s = new Session(client, "rate-limit", "rate limit me");
        const r = await s.run();
        // Both clients resolve runAgent() on RUN_ERROR and report it to onRunErrorEvent;
        // a rejection would mean the stream itself was refused (and is logged as an error).
        assert.equal(r.outcome, "resolved", `${r.label}: runAgent rejected: ${r.error?.stack || r.error}`);
        assertCleanConsole(r);
        assertWire(r, "RUN_ERROR");
        assertLifecycle(r, "RUN_ERROR");
        assert.equal(r.runErrors.length, 1, "onRunErrorEvent called once");
        const err = r.runErrors[0];
        assert.equal(typeof err.message, "string");
        assert.ok(err.message.length > 0, "RUN_ERROR.message is not empty");
        assert.ok(err.code === undefined || typeof err.code === "string", "RUN_ERROR.code is a string if present");
        assert.equal(r.events.filter((e) => e.type === "RUN_FINISHED").length, 0, "no RUN_FINISHED");
        assert.equal(s.agent.isRunning, false);
        const added = newMessages(s, r);
        assert.ok(!added.some((m) => m.role === "assistant" && m.toolCalls?.length), "no tool calls left behind");
      });
    });
  }
}
