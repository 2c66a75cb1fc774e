// Sub-agents with the real clients: a coordinator profile that delegates to a researcher (which
// delegates to a factchecker), to another agui-lambda process and to aimock's AG-UI mock, driven
// by @ag-ui/client 1.0.0 and 0.0.59 (their verifyEvents on, no console output allowed): a child
// that finishes, two in parallel, a grandchild, a child that fails, a child that asks for
// approval (1.0: an interrupt and the resume; 0.0.59: its confirm tool), a cancel mid-child. Then
// `inline` (a server on SUBAGENT_VISIBILITY=auto): no SUBAGENT_* for a client that names no
// protocol version, so @ag-ui/client 0.0.58, which fails a run on any event type it does not
// know, completes it (and fails on the attributed server, which proves it strict).
//
// Environment:
//   AGUI_BASE         (required) the coordinator (SUBAGENT_VISIBILITY=attributed)
//   AGUI_AUTO_BASE    (required) the same profiles on SUBAGENT_VISIBILITY=auto
//   AGUI_REMOTE_BASE  (required) the agui-lambda process the coordinator calls as a remote child
//   CAPTURE_DIR       (optional) every response body is saved as subagents-<name>-<n>.sse
//
// Run: cd tests/node && AGUI_BASE=... AGUI_AUTO_BASE=... AGUI_REMOTE_BASE=... node --test subagents.test.mjs

import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { HttpAgent as HttpAgent100 } from "@ag-ui/client";
import { HttpAgent as HttpAgent0059 } from "client-0059";
import { HttpAgent as HttpAgent0058 } from "client-0058";
import { EventSchemas } from "@ag-ui/core/schemas";
import { saveCapture } from "./capture.mjs";

const BASE = process.env.AGUI_BASE;
const AUTO_BASE = process.env.AGUI_AUTO_BASE;
const REMOTE_BASE = process.env.AGUI_REMOTE_BASE;
const CAPTURE_DIR = process.env.CAPTURE_DIR || "";
delete process.env.SUPPRESS_TRANSFORMATION_WARNINGS;

const CONFIRM_TOOL = {
  name: "confirmAction",
  description: "Ask the user to confirm an action before it is carried out.",
  parameters: { type: "object", properties: { action: { type: "string" } }, required: ["action"] },
};
const CLIENTS = [
  { version: "1.0.0", HttpAgent: HttpAgent100 },
  { version: "0.0.59", HttpAgent: HttpAgent0059 },
];

// Any console output of a client is a failure.
const consoleLog = [];
for (const level of ["warn", "error"]) {
  const real = console[level];
  console[level] = (...args) => {
    consoleLog.push(`${level}: ${args.map(String).join(" ")}`);
    real.apply(console, args);
  };
}

let captures = 0;
class Session {
  constructor(HttpAgent, name, userText, base = BASE) {
    this.name = name;
    this.agent = new HttpAgent({
      url: `${base}/agent`,
      threadId: randomUUID(),
      initialMessages: [{ id: randomUUID(), role: "user", content: userText }],
      // The stream goes on to the client as it comes (a cancel mid-run needs that), and a copy
      // to the capture file once it ends.
      fetch: async (url, init) => {
        const response = await fetch(url, init);
        if (!CAPTURE_DIR || !response.body) return response;
        const [toClient, toFile] = response.body.tee();
        const name = `subagents-${this.name}-${++captures}`;
        new Response(toFile).text().then((text) => saveCapture(CAPTURE_DIR, name, text, init?.body));
        return new Response(toClient, { status: response.status, headers: response.headers });
      },
    });
  }

  async run(params = {}, onEvent = () => {}) {
    const events = [];
    const before = consoleLog.length;
    await this.agent.runAgent(
      { runId: randomUUID(), tools: [CONFIRM_TOOL], context: [], ...params },
      { onEvent: ({ event }) => { events.push(structuredClone(event)); onEvent(event); } },
    );
    assert.deepEqual(consoleLog.slice(before), [], `${this.name}: the client printed warnings`);
    return events;
  }
}

const ofType = (events, type) => events.filter((e) => e.type === type);
const textBy = (events, subagentRunId) =>
  ofType(events, "TEXT_MESSAGE_CONTENT").filter((e) => e.subagentRunId === subagentRunId).map((e) => e.delta).join("");

// Every event as @ag-ui/core 1.0.0 defines it, with no field its schema strips.
function assertSchema(events) {
  for (const event of events) assert.deepEqual(EventSchemas.parse(event), event, `${event.type} has a field outside the 1.0 schema`);
}

async function thread(base, threadId) {
  const response = await fetch(`${base}/threads/${threadId}`);
  assert.equal(response.status, 200, `GET /threads/${threadId}`);
  return response.json();
}

for (const { version, HttpAgent } of CLIENTS) {
  describe(`@ag-ui/client ${version}`, () => {
    const v1 = version === "1.0.0";
    const check = (events) => {
      if (v1) assertSchema(events);
      assert.equal(events.at(-1).type, "RUN_FINISHED", events.map((e) => e.type).join(" "));
    };

    test("a child that finishes: its work streams tagged under the call, its answer is the result", async () => {
      const session = new Session(HttpAgent, `${version}-finish`, "[subagents] research the moon");
      const events = await session.run();
      check(events);
      const [started] = ofType(events, "SUBAGENT_STARTED");
      assert.equal(started.name, "researcher");
      assert.equal(started.parentToolCallId, "call_sa_moon");
      assert.equal(textBy(events, started.subagentRunId), "The moon is about 384,400 km away.");
      assert.equal(ofType(events, "SUBAGENT_FINISHED")[0].result, "The moon is about 384,400 km away.");
      const result = session.agent.messages.find((m) => m.role === "tool" && m.toolCallId === "call_sa_moon");
      assert.equal(result.content, "The moon is about 384,400 km away.");
      // The client keeps the researcher's message apart, by its producer.
      const theirs = session.agent.messages.filter((m) => m.subagentRunId === started.subagentRunId);
      assert.ok(theirs.some((m) => m.role === "assistant" && m.content === "The moon is about 384,400 km away."));
      // The next run resends them; the coordinator's thread never takes them.
      session.agent.addMessage({ id: randomUUID(), role: "user", content: "[subagents] two at once" });
      check(await session.run());
      const stored = await thread(BASE, session.agent.threadId);
      assert.ok(stored.messages.every((m) => !m.id.startsWith("sa-")), "no child message in the parent's thread");
    });

    test("two children in one step run side by side", async () => {
      const session = new Session(HttpAgent, `${version}-parallel`, "[subagents] two at once");
      const events = await session.run();
      check(events);
      const started = ofType(events, "SUBAGENT_STARTED");
      assert.equal(started.length, 2);
      assert.deepEqual(
        started.map((s) => textBy(events, s.subagentRunId)).sort(),
        ["The moon is about 384,400 km away.", "The sun is a star."],
      );
      assert.equal(ofType(events, "SUBAGENT_FINISHED").length, 2);
    });

    test("a grandchild names its parent", async () => {
      const session = new Session(HttpAgent, `${version}-grandchild`, "[subagents] go deep");
      const events = await session.run();
      check(events);
      const [child, grandchild] = ofType(events, "SUBAGENT_STARTED");
      assert.equal(grandchild.name, "factchecker");
      assert.equal(grandchild.parentSubagentRunId, child.subagentRunId);
      assert.equal(textBy(events, grandchild.subagentRunId), "Yes, the moon is far.");
    });

    test("a child that fails: SUBAGENT_ERROR, an error result, and the parent goes on", async () => {
      const session = new Session(HttpAgent, `${version}-fail`, "[subagents] this will fail");
      const events = await session.run();
      check(events);
      const [error] = ofType(events, "SUBAGENT_ERROR");
      assert.equal(error.code, "MODEL_UNAVAILABLE");
      const result = session.agent.messages.find((m) => m.role === "tool" && m.toolCallId === "call_sa_fail");
      assert.match(result.content, /^Error: the researcher agent failed/);
      assert.equal(session.agent.messages.at(-1).content, "Coordinator: the researcher failed, so I answer myself.");
    });

    test("a child that asks for approval suspends, the answer reaches it, then the parent finishes", async () => {
      const session = new Session(HttpAgent, `${version}-approval`, "[subagents] ask the time");
      const first = await session.run();
      const [finished] = ofType(first, "SUBAGENT_FINISHED");
      assert.equal(finished.outcome.type, "suspended");
      let second;
      if (v1) {
        assertSchema(first);
        const end = first.at(-1);
        assert.equal(end.outcome.type, "interrupt");
        const [interrupt] = end.outcome.interrupts;
        assert.equal(interrupt.subagentRunId, finished.subagentRunId);
        assert.deepEqual(finished.outcome.interruptIds, [interrupt.id]);
        assert.equal(session.agent.pendingInterrupts.length, 1);
        second = await session.run({ resume: [{ interruptId: interrupt.id, status: "resolved", payload: { approved: true } }] });
      } else {
        // 0.0.59 has no interrupts: the child asks through the client's confirm tool.
        assert.equal(first.at(-1).outcome, undefined);
        const ask = ofType(first, "TOOL_CALL_START").find((e) => e.toolCallName === "confirmAction");
        assert.equal(ask.subagentRunId, finished.subagentRunId);
        session.agent.addMessage({ id: randomUUID(), role: "tool", toolCallId: ask.toolCallId, content: "confirmed" });
        second = await session.run();
      }
      check(second);
      const [continued] = ofType(second, "SUBAGENT_STARTED");
      assert.equal(continued.subagentRunId, finished.subagentRunId, "the same invocation continues");
      const time = ofType(second, "TOOL_CALL_RESULT").find((e) => e.subagentRunId === finished.subagentRunId);
      assert.match(time.content, /Europe\/Paris/);
      assert.equal(session.agent.messages.at(-1).content, "Coordinator: the researcher looked at the clock.");
      if (v1) assert.deepEqual(session.agent.pendingInterrupts, []);
    });

    test("a cancel mid-child ends the child, then the run", async () => {
      const session = new Session(HttpAgent, `${version}-cancel`, "[subagents] slow child");
      let cancelled = null;
      let runId = null;
      const events = await session.run({}, (event) => {
        if (event.type === "RUN_STARTED") runId = event.runId;
        if (!cancelled && event.type === "TEXT_MESSAGE_CONTENT" && event.subagentRunId) {
          cancelled = fetch(`${BASE}/threads/${session.agent.threadId}/runs/${runId}/cancel`, { method: "POST" });
        }
      });
      assert.equal((await cancelled).status, 202);
      const [error] = ofType(events, "SUBAGENT_ERROR");
      assert.equal(error.code, "CANCELLED");
      const end = events.at(-1);
      if (v1) assert.deepEqual(end.outcome, { type: "cancelled" });
      else assert.deepEqual([end.type, end.metadata?.["agui-lambda"]?.outcome], ["RUN_FINISHED", "cancelled"]);
    });

    test("remote children: another agui-lambda process, and aimock's AG-UI mock", async () => {
      const session = new Session(HttpAgent, `${version}-remote`, "[subagents] ask the remote agent");
      const events = await session.run();
      check(events);
      const [started] = ofType(events, "SUBAGENT_STARTED");
      assert.equal(started.name, "remote_researcher");
      assert.equal(textBy(events, started.subagentRunId), "Paris is the capital of France.");
      const link = session.agent.messages.find((m) => m.role === "tool" && m.toolCallId === "call_sa_remote");
      assert.equal(link.content, "Paris is the capital of France.");
      const stored = await thread(BASE, session.agent.threadId);
      const childThread = stored.messages.find((m) => m.role === "tool" && m.toolCallId === "call_sa_remote").metadata["agui-lambda"].subagent.threadId;
      const remote = await thread(REMOTE_BASE, childThread);
      assert.equal(remote.messages.at(-1).content, "Paris is the capital of France.");

      const mocked = new Session(HttpAgent, `${version}-aimock`, "[subagents] ask the mock agent");
      const mockEvents = await mocked.run();
      check(mockEvents);
      const [mock] = ofType(mockEvents, "SUBAGENT_STARTED");
      assert.equal(mock.name, "mock_agent");
      assert.equal(textBy(mockEvents, mock.subagentRunId), "Hello from the mock AG-UI agent.");
    });
  });
}

describe("inline: clients that predate sub-agents", () => {
  test("0.0.59 without protocolVersion gets the child's work as plain events", async () => {
    const session = new Session(HttpAgent0059, "inline-0059", "[subagents] go deep", AUTO_BASE);
    const events = await session.run();
    assert.equal(events.at(-1).type, "RUN_FINISHED");
    assert.ok(events.every((e) => !e.type.startsWith("SUBAGENT_") && e.subagentRunId === undefined));
    const texts = ofType(events, "TEXT_MESSAGE_CONTENT").map((e) => e.delta).join("");
    assert.match(texts, /Yes, the moon is far\./);
    assert.equal(session.agent.messages.at(-1).content, "Coordinator: the fact was checked twice over.");
  });

  test("0.0.58, which fails on unknown event types, completes an inline run and fails an attributed one", async () => {
    const inline = new Session(HttpAgent0058, "inline-0058", "[subagents] research the moon", AUTO_BASE);
    const events = await inline.run({ tools: [] });
    assert.equal(events.at(-1).type, "RUN_FINISHED");
    assert.equal(inline.agent.messages.at(-1).content, "Coordinator: the researcher found that the moon is about 384,400 km away.");
    const attributed = new Session(HttpAgent0058, "attributed-0058", "[subagents] research the moon", BASE);
    const [warn, error] = [console.warn, console.error];
    console.warn = console.error = () => {}; // its refusal, expected here
    try {
      await assert.rejects(attributed.agent.runAgent({ runId: randomUUID(), tools: [], context: [] }), /discriminator/);
    } finally {
      [console.warn, console.error] = [warn, error];
    }
  });
});
