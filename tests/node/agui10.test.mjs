// AG-UI 1.0 with the real clients: tool approval as interrupts through @ag-ui/client 1.0.0
// (approved, denied, approved with edited arguments), the confirm-tool fallback through 0.0.59,
// usage and protocolVersion as the 1.0 client parses them, and GET /capabilities against
// @ag-ui/core 1.0.0's schema.
//
// Environment:
//   AGUI_BASE   (required) the function's base URL; the server must run with
//               APPROVAL_REQUIRED_TOOLS=get_current_time and the aimock fixtures
//   CAPTURE_DIR (optional) every response body is saved there as agui10-<name>-<n>.sse
//
// Run: cd tests/node && npm ci && AGUI_BASE=... node --test agui10.test.mjs

import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { HttpAgent as HttpAgent100 } from "@ag-ui/client";
import { HttpAgent as HttpAgent0059 } from "client-0059";
import { AgentCapabilitiesSchema, EventSchemas } from "@ag-ui/core/schemas";
import { saveCapture } from "./capture.mjs";

const BASE = process.env.AGUI_BASE;
const CAPTURE_DIR = process.env.CAPTURE_DIR || "";
delete process.env.SUPPRESS_TRANSFORMATION_WARNINGS;

const CONFIRM_TOOL = {
  name: "confirmAction",
  description: "Ask the user to confirm an action before it is carried out.",
  parameters: {
    type: "object",
    properties: { action: { type: "string" }, count: { type: "number" } },
    required: ["action"],
  },
};

// Any console output of a client is a failure: the 1.0 client warns about fields it strips.
const consoleLog = [];
for (const level of ["warn", "error"]) {
  const real = console[level];
  console[level] = (...args) => {
    consoleLog.push(`${level}: ${args.map(String).join(" ")}`);
    real.apply(console, args);
  };
}

class Session {
  constructor(HttpAgent, name, userText) {
    this.name = name;
    this.bodies = [];
    this.agent = new HttpAgent({
      url: `${BASE}/agent`,
      threadId: randomUUID(),
      initialMessages: [{ id: randomUUID(), role: "user", content: userText }],
      fetch: async (url, init) => {
        const response = await fetch(url, init);
        const text = await response.text();
        this.bodies.push(text);
        if (CAPTURE_DIR) {
          saveCapture(CAPTURE_DIR, `agui10-${this.name}-${this.bodies.length}`, text, init?.body);
        }
        return new Response(text, { status: response.status, headers: response.headers });
      },
    });
  }

  async run(params = {}) {
    const events = [];
    const before = consoleLog.length;
    await this.agent.runAgent(
      { runId: randomUUID(), tools: [CONFIRM_TOOL], context: [], ...params },
      { onEvent: ({ event }) => events.push(structuredClone(event)) },
    );
    assert.deepEqual(consoleLog.slice(before), [], `${this.name}: the client printed warnings`);
    const finished = events.at(-1);
    assert.equal(finished.type, "RUN_FINISHED", `${this.name}: ${events.map((e) => e.type)}`);
    return { events, finished };
  }

  toolMessage(toolCallId) {
    return this.agent.messages.find((m) => m.role === "tool" && m.toolCallId === toolCallId);
  }

  lastText() {
    return this.agent.messages.filter((m) => m.role === "assistant" && m.content).at(-1)?.content;
  }
}

// Every event as @ag-ui/core 1.0.0 defines it, with no field its schema strips.
function assertSchema(events) {
  for (const event of events) {
    const parsed = EventSchemas.parse(event);
    assert.deepEqual(parsed, event, `${event.type} carries a field outside the 1.0 schema`);
  }
}

async function interrupted(name) {
  const session = new Session(HttpAgent100, name, "what time is it");
  const { events, finished } = await session.run();
  assertSchema(events);
  assert.equal(events[0].protocolVersion, "1.0");
  assert.equal(finished.outcome.type, "interrupt");
  assert.equal(session.agent.pendingInterrupts.length, 1, "the client holds the open interrupt");
  const interrupt = finished.outcome.interrupts[0];
  const call = events.find((e) => e.type === "TOOL_CALL_START");
  assert.equal(call.toolCallName, "get_current_time");
  assert.equal(interrupt.toolCallId, call.toolCallId);
  assert.equal(interrupt.reason, "tool_call");
  assert.ok(Date.parse(interrupt.expiresAt) > Date.now());
  assert.ok(!session.toolMessage(call.toolCallId), "the tool has not run");
  // The 1.0 client itself refuses a run that leaves the interrupt unanswered.
  await assert.rejects(session.agent.runAgent({ runId: randomUUID() }), /pending interrupt/);
  return { session, interrupt, callId: call.toolCallId, usage: finished.usage };
}

test("1.0: an approved interrupt runs the tool and the run goes on", async () => {
  const { session, interrupt, callId, usage } = await interrupted("approve");
  assert.equal(usage[0].provider, "openai");
  assert.equal(usage[0].totalTokens, usage[0].inputTokens + usage[0].outputTokens);
  const { events, finished } = await session.run({
    resume: [{ interruptId: interrupt.id, status: "resolved", payload: { approved: true } }],
  });
  assertSchema(events);
  assert.equal(finished.outcome, undefined);
  assert.deepEqual(session.agent.pendingInterrupts, []);
  assert.match(session.toolMessage(callId).content, /Europe\/Paris/);
  assert.equal(session.lastText(), "It is now the time shown in Paris.");
});

test("1.0: a denied interrupt never runs the tool and the model hears why", async () => {
  const { session, interrupt, callId } = await interrupted("deny");
  await session.run({
    resume: [
      { interruptId: interrupt.id, status: "resolved", payload: { approved: false, reason: "not today" } },
    ],
  });
  const result = session.toolMessage(callId).content;
  assert.match(result, /denied/);
  assert.match(result, /not today/);
  assert.doesNotMatch(result, /Europe\/Paris/);
});

test("1.0: approved with edited arguments runs the tool with the edit", async () => {
  const { session, interrupt, callId } = await interrupted("edit");
  assert.equal(interrupt.responseSchema.properties.editedArgs.properties.timezone.type, "string");
  await session.run({
    resume: [
      {
        interruptId: interrupt.id,
        status: "resolved",
        payload: { approved: true, editedArgs: { timezone: "Asia/Tokyo" } },
      },
    ],
  });
  assert.match(session.toolMessage(callId).content, /Asia\/Tokyo/);
});

test("0.0.59: the approval arrives as the confirm tool, and confirming runs the tool", async () => {
  const session = new Session(HttpAgent0059, "fallback", "what time is it");
  const first = await session.run();
  // Told the version the server speaks (0.0.59 passes the field through), with no outcome.
  assert.equal(first.events[0].protocolVersion, "1.1");
  assert.equal(first.finished.outcome, undefined);
  const assistant = session.agent.messages.find((m) => m.role === "assistant" && m.toolCalls?.length);
  const [gated, confirm] = assistant.toolCalls;
  assert.equal(gated.function.name, "get_current_time");
  assert.equal(confirm.function.name, "confirmAction");
  assert.match(JSON.parse(confirm.function.arguments).action, /get_current_time/);
  // What CopilotKit does after running the confirm tool in the browser.
  session.agent.addMessage({ id: randomUUID(), role: "tool", toolCallId: confirm.id, content: "confirmed" });
  await session.run();
  assert.match(session.toolMessage(gated.id).content, /Europe\/Paris/);
  assert.equal(session.lastText(), "It is now the time shown in Paris.");
});

test("0.0.59: declining the confirm tool never runs the tool", async () => {
  const session = new Session(HttpAgent0059, "fallback-deny", "what time is it");
  await session.run();
  const assistant = session.agent.messages.find((m) => m.role === "assistant" && m.toolCalls?.length);
  const [gated, confirm] = assistant.toolCalls;
  session.agent.addMessage({ id: randomUUID(), role: "tool", toolCallId: confirm.id, content: "cancelled" });
  await session.run();
  assert.doesNotMatch(session.toolMessage(gated.id).content, /Europe\/Paris/);
});

test("capabilities: AgentCapabilities of @ag-ui/core 1.0.0, with no field it strips", async () => {
  const response = await fetch(`${BASE}/capabilities`);
  assert.equal(response.status, 200);
  const document = await response.json();
  const parsed = AgentCapabilitiesSchema.parse(document);
  assert.deepEqual(parsed, document);
  assert.equal(document.humanInTheLoop.interrupts, true);
  assert.equal(document.humanInTheLoop.approvals, true);
  assert.ok(document.tools.items.some((tool) => tool.name === "get_current_time"));
  // What the OpenAI-compatible provider takes inline.
  assert.equal(document.multimodal.input.image, true);
  assert.equal(document.multimodal.input.pdf, true);
});
