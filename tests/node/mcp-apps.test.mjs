// MCP Apps and Open Generative UI through both real clients (@ag-ui/client 1.0.0 and 0.0.59,
// whose HttpAgent verifies every stream): an MCP App's view next to its call, kept and shown
// again to a client that reloads; the view's calls coming back as CopilotKit sends them (a run
// whose forwardedProps carry the request) and as assistant-ui sends them (its JSON route); a
// generateSandboxedUi call previewed as it streams, the client applying every patch.
//
// Environment:
//   AGUI_BASE   (required) the function's base URL, on the aimock fixtures, with the MCP App
//               server of mcp-apps-server.mjs listed as `weather` in MCP_SERVERS
//   CAPTURE_DIR (optional) every response body is saved there as mcp-apps-<name>-<n>.sse, its
//               run input beside it
//
// Run: cd tests/node && npm ci && AGUI_BASE=... node --test mcp-apps.test.mjs

import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { HttpAgent as HttpAgent100 } from "@ag-ui/client";
import { HttpAgent as HttpAgent0059 } from "client-0059";
import { saveCapture } from "./capture.mjs";

const BASE = process.env.AGUI_BASE;
const CAPTURE_DIR = process.env.CAPTURE_DIR || "";
const ASK = "[mcp-apps] show the weather in Oslo";
const SKETCH = "[ogui] sketch a card slowly";
const CLIENTS = [
  ["1.0.0", HttpAgent100],
  ["0.0.59", HttpAgent0059],
];
// CopilotKit 1.74's generateSandboxedUi, its zod schema as JSON Schema.
const SANDBOXED_UI = {
  name: "generateSandboxedUi",
  description: "Generate a sandboxed UI",
  parameters: {
    type: "object",
    properties: {
      initialHeight: { type: "number" },
      placeholderMessages: { type: "array", items: { type: "string" } },
      css: { type: "string" },
      html: { type: "string" },
      jsFunctions: { type: "string" },
      jsExpressions: { type: "array", items: { type: "string" } },
    },
  },
};

// Any warning of a client is a failure (both print one for an event they cannot apply).
const consoleLog = [];
for (const level of ["warn", "error"]) {
  const real = console[level];
  console[level] = (...args) => {
    consoleLog.push(`${level}: ${args.map(String).join(" ")}`);
    real.apply(console, args);
  };
}

class Session {
  constructor(HttpAgent, name, { threadId = randomUUID(), messages } = {}) {
    this.name = name;
    this.threadId = threadId;
    this.bodies = [];
    this.agent = new HttpAgent({
      url: `${BASE}/agent`,
      threadId,
      initialMessages: messages ?? [],
      fetch: async (url, init) => {
        const response = await fetch(url, init);
        const text = await response.text();
        this.bodies.push(text);
        saveCapture(CAPTURE_DIR, `mcp-apps-${this.name}-${this.bodies.length}`, text, init?.body);
        return new Response(text, { status: response.status, headers: response.headers });
      },
    });
  }

  say(text) {
    const message = { id: randomUUID(), role: "user", content: text };
    this.agent.addMessage(message);
    return message;
  }

  async run(params = {}) {
    const events = [];
    const before = consoleLog.length;
    const outcome = await this.agent.runAgent(
      { runId: randomUUID(), tools: [], context: [], ...params },
      { onEvent: ({ event }) => events.push(structuredClone(event)) },
    );
    assert.deepEqual(consoleLog.slice(before), [], `${this.name}: the client printed warnings`);
    assert.equal(events.at(-1).type, "RUN_FINISHED", `${this.name}: ${events.map((e) => e.type)}`);
    return { events, result: outcome.result };
  }

  /** A view's request as CopilotKit's renderer sends it: a run carrying it, on this thread. */
  async proxied(method, params, server = { serverHash: "unused", serverId: "weather" }) {
    const before = this.agent.messages.length;
    const { events, result } = await this.run({
      forwardedProps: { __proxiedMCPRequest: { ...server, method, params } },
    });
    assert.deepEqual(events.map((e) => e.type), ["RUN_STARTED", "RUN_FINISHED"]);
    assert.equal(this.agent.messages.length, before, "a view's request adds no message");
    return result;
  }

  activities(type) {
    return this.agent.messages.filter((m) => m.role === "activity" && m.activityType === type);
  }

  lastText() {
    return this.agent.messages.filter((m) => m.role === "assistant" && m.content).at(-1)?.content;
  }
}

const textOf = (result) => (result?.content ?? []).map((part) => part.text).join(" ");

for (const [version, HttpAgent] of CLIENTS) {
  test(`mcp-apps (${version}): the view shows next to the call and the model answers from its result`, async () => {
    const session = new Session(HttpAgent, `view-${version}`);
    session.say(ASK);
    const { events } = await session.run();
    const kinds = events.map((e) => e.type);
    const call = events.find((e) => e.type === "TOOL_CALL_START");
    assert.equal(call.toolCallName, "weather__weather_view");
    assert.equal(kinds[kinds.indexOf("TOOL_CALL_RESULT") + 1], "ACTIVITY_SNAPSHOT");
    const [view] = session.activities("mcp-apps");
    assert.ok(view, "the client holds the view as an activity message");
    assert.equal(view.id, `${call.toolCallId}-mcp-app`);
    assert.equal(view.content.resourceUri, "ui://weather/view.html");
    assert.equal(view.content.serverId, "weather");
    assert.equal(view.content.toolCallId, call.toolCallId);
    assert.deepEqual(view.content.toolInput, { city: "Oslo" });
    assert.deepEqual(view.content.result.structuredContent, { city: "Oslo", celsius: 4, sky: "light rain" });
    assert.equal(session.lastText(), "The weather view shows Oslo at 4 °C with light rain.");

    // The view's own requests, as CopilotKit sends them, on the same thread.
    const read = await session.proxied("resources/read", { uri: view.content.resourceUri }, {
      serverHash: view.content.serverHash,
    });
    assert.equal(read.contents[0].mimeType, "text/html;profile=mcp-app");
    assert.match(read.contents[0].text, /Weather view/);
    const refreshed = await session.proxied("tools/call", { name: "refresh_weather", arguments: { city: "Oslo" } });
    assert.match(textOf(refreshed), /^Refreshed Oslo: Weather in Oslo/);
    const refused = await session.proxied("tools/call", { name: "forecast_text", arguments: { city: "Oslo" } });
    assert.equal(refused.isError, true);
    assert.equal(textOf(refused), "forecast_text is not one of this server's tools a view may call");
    const other = await session.proxied("notifications/initialized", {});
    assert.equal(other.isError, true);
  });

  test(`mcp-apps (${version}): a client that reloads the thread is shown the view again`, async () => {
    const first = new Session(HttpAgent, `reload-a-${version}`);
    const asked = first.say(ASK);
    await first.run();
    const [view] = first.activities("mcp-apps");
    // A fresh client holding only the first message: the snapshot that catches it up.
    const reloaded = new Session(HttpAgent, `reload-b-${version}`, { threadId: first.threadId, messages: [asked] });
    reloaded.say("hello");
    const { events } = await reloaded.run();
    assert.ok(events.some((e) => e.type === "MESSAGES_SNAPSHOT"));
    const [shown] = reloaded.activities("mcp-apps");
    const { id, activityType, content } = view;
    assert.deepEqual({ id: shown.id, activityType: shown.activityType, content: shown.content }, { id, activityType, content });
    const at = reloaded.agent.messages.indexOf(shown);
    assert.equal(reloaded.agent.messages[at - 1].role, "tool", "right after the call's result");
  });

  test(`open-generative-ui (${version}): the call is previewed as it streams and the follow-up answers`, async () => {
    const session = new Session(HttpAgent, `ogui-${version}`);
    session.say(SKETCH);
    const { events } = await session.run({
      tools: [SANDBOXED_UI],
    });
    const kinds = events.map((e) => e.type);
    const start = kinds.indexOf("TOOL_CALL_START");
    const call = events[start];
    assert.equal(kinds[start - 1], "ACTIVITY_SNAPSHOT", "the activity opens before the call");
    assert.deepEqual(events[start - 1].content, { generating: true });
    const deltas = events.filter((e) => e.type === "ACTIVITY_DELTA");
    const pieces = kinds.filter((k) => k === "TOOL_CALL_ARGS").length;
    assert.ok(deltas.length <= pieces + 1, `${deltas.length} patches for ${pieces} pieces`);
    const htmlPieces = deltas.flatMap((d) => d.patch).filter((op) => op.path === "/html/-").length;
    assert.ok(htmlPieces >= 10, `the HTML in pieces: ${htmlPieces}`);
    assert.deepEqual(kinds.slice(-2), ["TOOL_CALL_END", "RUN_FINISHED"], "the run ends at the frontend tool");
    // What the client built by applying every patch.
    const [sandbox] = session.activities("open-generative-ui");
    assert.equal(sandbox.id, `${call.toolCallId}-activity`);
    const args = JSON.parse(session.agent.messages.flatMap((m) => m.toolCalls ?? []).at(-1).function.arguments);
    assert.equal(sandbox.content.html.join(""), args.html);
    assert.equal(sandbox.content.css, args.css);
    assert.deepEqual(sandbox.content.jsExpressions, args.jsExpressions);
    assert.equal(sandbox.content.generating, false);
    assert.equal(sandbox.content.htmlComplete, true);
    // CopilotKit's handler answers "UI generated" and follows up.
    session.agent.addMessage({ id: randomUUID(), role: "tool", toolCallId: call.toolCallId, content: "UI generated" });
    await session.run({ tools: [SANDBOXED_UI] });
    assert.equal(session.lastText(), "The card is on the page.");
  });
}

test("mcp-apps: assistant-ui's route answers the view's requests; the app-only tool is not offered", async () => {
  const session = new Session(HttpAgent100, "route");
  session.say(ASK);
  await session.run();
  const post = async (method, params) => {
    const response = await fetch(`${BASE}/threads/${session.threadId}/mcp-apps`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ method, params }),
    });
    return { status: response.status, body: await response.json() };
  };
  const view = await post("mcp-apps/read-resource", { uri: "ui://weather/view.html", serverId: "weather" });
  assert.equal(view.status, 200);
  assert.equal(view.body.mimeType, "text/html;profile=mcp-app");
  assert.match(view.body.html, /data-testid="refresh"/);
  const refreshed = await post("tools/call", { name: "refresh_weather", arguments: { city: "Oslo" }, serverId: "weather" });
  assert.match(textOf(refreshed.body), /^Refreshed Oslo/);
  const refused = await post("tools/call", { name: "forecast_text", arguments: {}, serverId: "weather" });
  assert.equal(refused.body.isError, true);
  const capabilities = await (await fetch(`${BASE}/capabilities`)).json();
  const names = capabilities.tools.items.map((tool) => tool.name);
  assert.ok(names.includes("weather__weather_view"), names.join(", "));
  assert.ok(!names.some((name) => name.includes("refresh_weather")), names.join(", "));
});
