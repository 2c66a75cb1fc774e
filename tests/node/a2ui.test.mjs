// A2UI surfaces through both real clients (@ag-ui/client 1.0.0 and 0.0.59): a form the model
// builds (aimock's "[a2ui] …" fixtures, tests/fixtures/aimock-a2ui.json) painted as an
// `a2ui-surface` activity in the spec's form for a client that declares it paints A2UI
// (forwardedProps.a2uiCatalogAvailable) and in assistant-ui's form for one that declares nothing,
// checked by assistant-ui's own A2UI reducer; a click answered with what was typed; an invalid
// first attempt never painted; a model that never gets it right ending `failed`; a reloaded
// thread's surface, and an update after the reload. On a server that leaves A2UI to `auto`, a
// client that cannot paint is offered no tool.
//
// Environment:
//   AGUI_A2UI_BASE   (required) a server with A2UI=assistant-ui on aimock with the A2UI fixtures
//   AGUI_PLAIN_BASE  (required) a server with the default A2UI=auto on the same aimock
//   CAPTURE_DIR      (optional) every response body is saved there as a2ui-<name>-<n>.sse (the
//                    ag-ui-validate step and scripts/check_a2ui_captures.py read them)
//
// Run: cd tests/node && AGUI_A2UI_BASE=... AGUI_PLAIN_BASE=... node --test a2ui.test.mjs

import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { HttpAgent as HttpAgent100 } from "@ag-ui/client";
import { HttpAgent as HttpAgent0059 } from "client-0059";

const BASE = process.env.AGUI_A2UI_BASE;
const PLAIN_BASE = process.env.AGUI_PLAIN_BASE;
const CAPTURE_DIR = process.env.CAPTURE_DIR || "";
const BASIC_CATALOG_ID = "https://a2ui.org/specification/v0_9/basic_catalog.json";
const HERE = path.dirname(fileURLToPath(import.meta.url));
const CLIENTS = [
  ["1.0.0", HttpAgent100],
  ["0.0.59", HttpAgent0059],
];

// Any console output of a client is a failure: a client warns about what it cannot apply.
const consoleLog = [];
for (const level of ["warn", "error"]) {
  const real = console[level];
  console[level] = (...args) => {
    consoleLog.push(`${level}: ${args.map(String).join(" ")}`);
    real.apply(console, args);
  };
}

class Session {
  constructor(HttpAgent, name, { base = BASE, threadId = randomUUID(), declares = true } = {}) {
    this.name = name;
    this.declares = declares;
    this.bodies = 0;
    this.agent = new HttpAgent({
      url: `${base}/agent`,
      threadId,
      fetch: async (url, init) => {
        const response = await fetch(url, init);
        const text = await response.text();
        this.bodies += 1;
        if (CAPTURE_DIR) {
          mkdirSync(CAPTURE_DIR, { recursive: true });
          writeFileSync(path.join(CAPTURE_DIR, `a2ui-${this.name}-${this.bodies}.sse`), text);
        }
        return new Response(text, { status: response.status, headers: response.headers });
      },
    });
  }

  async run({ text, forwardedProps = {} } = {}) {
    if (text) this.agent.addMessage({ id: randomUUID(), role: "user", content: text });
    const events = [];
    const before = consoleLog.length;
    await this.agent.runAgent(
      {
        runId: randomUUID(),
        tools: [],
        context: [],
        forwardedProps: { ...(this.declares ? { a2uiCatalogAvailable: true } : {}), ...forwardedProps },
      },
      { onEvent: ({ event }) => events.push(structuredClone(event)) },
    );
    assert.deepEqual(consoleLog.slice(before), [], `${this.name}: the client printed warnings`);
    assert.equal(events.at(-1).type, "RUN_FINISHED", `${this.name}: ${events.map((e) => e.type)}`);
    return events;
  }

  lastText() {
    return this.agent.messages.filter((m) => m.role === "assistant" && m.content).at(-1)?.content;
  }

  activities() {
    return this.agent.messages.filter((m) => m.role === "activity" && m.activityType === "a2ui-surface");
  }
}

const surfaceEvents = (events) => events.filter((e) => e.type === "ACTIVITY_SNAPSHOT" && e.activityType === "a2ui-surface");
const painted = (events) => surfaceEvents(events).filter((e) => Array.isArray(e.content.a2ui_operations));
const op = (operations, name) => operations.find((o) => o[name])?.[name];

/// The form of tests/fixtures/aimock-a2ui.json, painted in the spec's form.
function assertSpecForm(operations, surfaceId = "greeting-form") {
  for (const operation of operations) assert.equal(operation.version, "v0.9");
  assert.deepEqual(op(operations, "createSurface"), { surfaceId, catalogId: BASIC_CATALOG_ID });
  const components = op(operations, "updateComponents").components;
  const send = components.find((c) => c.id === "send");
  assert.equal(send.child, "send-label");
  assert.deepEqual(send.action, { event: { name: "submit", context: { name: { path: "/name" } } } });
  // A form whose field starts empty still paints at once in CopilotKit (no 8 s wait).
  assert.deepEqual(op(operations, "updateDataModel").value, { name: "", _surface: surfaceId });
}

for (const [version, HttpAgent] of CLIENTS) {
  test(`${version}: the model's form is painted as it is built, and a click is answered with what was typed`, async () => {
    const session = new Session(HttpAgent, `form-${version}`);
    const events = await session.run({ text: "[a2ui] form please" });
    const start = events.findIndex((e) => e.type === "TOOL_CALL_START" && e.toolCallName === "render_a2ui");
    assert.ok(start >= 0, events.map((e) => e.type).join(" "));
    const activityId = `a2ui-surface-${events[start].toolCallId}`;
    // `building` at once, before the first argument bytes.
    const building = events[start + 1];
    assert.equal(building.type, "ACTIVITY_SNAPSHOT");
    assert.equal(building.messageId, activityId);
    assert.equal(building.activityType, "a2ui-surface");
    assert.deepEqual(building.content, { status: "building" });
    const progress = surfaceEvents(events).filter((e) => typeof e.content.progressTokens === "number");
    assert.ok(progress.length >= 2, "progress while the arguments stream");
    const [paint] = painted(events);
    assert.equal(paint.messageId, activityId);
    assertSpecForm(paint.content.a2ui_operations);
    const result = events.find((e) => e.type === "TOOL_CALL_RESULT");
    assert.deepEqual(JSON.parse(result.content), { status: "rendered", surfaceId: "greeting-form" });
    assert.ok(events.indexOf(paint) < events.indexOf(result), "painted before the model is told");
    assert.equal(session.lastText(), "Fill in your name and press Send.");
    assert.equal(session.activities().length, 1, "the client holds the surface");

    const click = await session.run({
      forwardedProps: {
        a2uiAction: {
          userAction: {
            name: "submit",
            surfaceId: "greeting-form",
            sourceComponentId: "send",
            timestamp: new Date().toISOString(),
            context: { name: "Ada Lovelace" },
          },
        },
      },
    });
    const said = click.find((e) => e.type === "TEXT_MESSAGE_START" && e.role === "user");
    assert.ok(said, "the click is shown as what the user did");
    assert.equal(session.lastText(), "Thank you, Ada Lovelace: your name is in.");
    const action = session.agent.messages.find((m) => m.role === "user" && m.id === said.messageId);
    assert.equal(action.content, 'User performed action "submit" on surface "greeting-form" (component: send). Context: {"name":"Ada Lovelace"}');
  });

  test(`${version}: an invalid first attempt is never painted; the retry paints in its place`, async () => {
    const session = new Session(HttpAgent, `retry-${version}`);
    const events = await session.run({ text: "[a2ui] retry" });
    const surfaces = surfaceEvents(events);
    const retrying = surfaces.find((e) => e.content.status === "retrying");
    assert.equal(retrying.content.attempt, 2);
    assert.deepEqual(
      retrying.content.errors.map((e) => e.code),
      ["unresolved_child", "unknown_component"],
    );
    const paints = painted(events);
    assert.equal(paints.length, 1);
    assert.ok(surfaces.indexOf(retrying) < surfaces.indexOf(paints[0]));
    assert.ok(surfaces.every((e) => e.messageId === surfaces[0].messageId), "one activity for every attempt");
    assert.ok(!JSON.stringify(paints[0].content).includes("Fancy"), "nothing invalid painted");
    assertSpecForm(paints[0].content.a2ui_operations, "retry-form");
    const results = events.filter((e) => e.type === "TOOL_CALL_RESULT");
    assert.match(results[0].content, /\[unknown_component\] components\[2\]\.component/);
    assert.equal(session.lastText(), "Here is the form, on the second try.");
  });

  test(`${version}: a model that never gets it right ends failed, and the run answers`, async () => {
    const session = new Session(HttpAgent, `never-${version}`);
    const events = await session.run({ text: "[a2ui] never" });
    assert.equal(painted(events).length, 0, "nothing painted");
    const last = surfaceEvents(events).at(-1);
    assert.equal(last.content.status, "failed");
    assert.equal(last.content.error, "Failed to generate valid A2UI after 3 attempt(s)");
    assert.equal(last.content.attempts.length, 3);
    const results = events.filter((e) => e.type === "TOOL_CALL_RESULT");
    assert.equal(results.length, 3);
    assert.equal(JSON.parse(results[2].content).code, "a2ui_recovery_exhausted");
    assert.equal(session.lastText(), "I could not build that form; tell me your name here instead.");
  });

  test(`${version}: a reloaded thread keeps its surface, and an update after the reload builds on it`, async () => {
    const threadId = randomUUID();
    const first = new Session(HttpAgent, `reload-a-${version}`, { threadId });
    await first.run({ text: "[a2ui] form please" });
    const original = first.activities()[0];
    // What a reload reads: the thread keeps the surface with the answer that painted it.
    const page = await (await fetch(`${BASE}/threads/${threadId}`)).json();
    const kept = page.messages.find((m) => m.role === "tool" && m.metadata?.["agui-lambda"]?.activity);
    assert.deepEqual(kept.metadata["agui-lambda"].activity, {
      messageId: original.id,
      activityType: "a2ui-surface",
      content: original.content,
    });
    // A new client on the same thread: the update builds on the surface the thread holds.
    const second = new Session(HttpAgent, `reload-b-${version}`, { threadId });
    const events = await second.run({ text: "[a2ui] add email" });
    const [update] = painted(events);
    const components = op(update.content.a2ui_operations, "updateComponents").components;
    assert.deepEqual(components.map((c) => c.id), ["root", "body", "title", "name", "send", "send-label", "email"]);
    assert.deepEqual(op(update.content.a2ui_operations, "updateDataModel").value, { name: "", email: "someone@example.com" });
    assert.notEqual(update.messageId, original.id, "the update is a surface of its own, after the call");
  });
}

// assistant-ui's own reducer and converter, from the example's install.
async function assistantUiA2ui() {
  const example = path.resolve(HERE, "../../examples/assistant-ui/node_modules/@assistant-ui");
  for (const candidate of ["react-generative-ui", "react-ag-ui/node_modules/@assistant-ui/react-generative-ui"]) {
    const file = path.join(example, candidate, "dist/a2ui.js");
    if (existsSync(file)) return import(pathToFileURL(file).href);
  }
  assert.fail("examples/assistant-ui is not installed (scripts/install-test-tools.sh)");
}

test("0.0.59, declaring nothing: assistant-ui's form, which its own converter paints", async () => {
  const session = new Session(HttpAgent0059, "assistant-ui-form", { declares: false });
  const events = await session.run({ text: "[a2ui] form please" });
  const operations = painted(events)[0].content.a2ui_operations;
  assert.equal(op(operations, "createSurface").catalogId, "assistant-ui.com:a2ui-v0.9");
  const components = op(operations, "updateComponents").components;
  assert.deepEqual(components.find((c) => c.id === "send"), {
    id: "send",
    component: "Button",
    variant: "primary",
    label: "Send",
    action: { name: "submit", context: { name: { path: "/name" } } },
  });
  assert.deepEqual(components.find((c) => c.id === "root").children, ["body"]);
  const { applyA2uiOperations, convertSurfaceToUISpec } = await assistantUiA2ui();
  const { state, warnings } = applyA2uiOperations(new Map(), operations);
  assert.deepEqual(warnings, []);
  const { spec, warnings: shown } = convertSurfaceToUISpec(state.get("greeting-form"));
  assert.deepEqual(shown, []);
  const found = [];
  const walk = (node) => {
    found.push(node);
    (Array.isArray(node.children) ? node.children : node.children ? [node.children] : []).forEach(walk);
  };
  walk(spec);
  const button = found.find((node) => node.$type === "Button");
  assert.equal(button.label, "Send");
  assert.equal(button.$action.name, "submit");
  assert.equal(button.$action.surfaceId, "greeting-form");
  assert.equal(found.find((node) => node.$type === "Input").name, "name");
});

test("a client that cannot paint is offered no tool and shown no surface", async () => {
  const session = new Session(HttpAgent100, "cannot-paint", { base: PLAIN_BASE, declares: false });
  const events = await session.run({ text: "[a2ui] form please" });
  assert.equal(surfaceEvents(events).length, 0);
  assert.ok(!events.some((e) => e.type === "TOOL_CALL_START"));
  // aimock answers this only when the request offers no render_a2ui.
  assert.equal(session.lastText(), "I cannot show forms here: it would have a name field and a Send button.");
});
