// Each model provider's reasoning and tool streams through both real clients, @ag-ui/client 1.0.0
// and 0.0.59: a server tool after reasoning, and a frontend tool that ends the run and is
// answered in the next one. No client may print a warning; every stream is captured for
// ag-ui-validate.
//
// Environment:
//   AGUI_PROVIDER_BASES (required) comma-separated name=base-URL, one local server per provider,
//                       each on a model that answers the markers of tests/strict_models.py:
//                       `[time]` calls get_current_time, `[color]` calls change-background-color
//   CAPTURE_DIR         (optional) every response body is saved there as providers-<name>-<n>.sse
//
// Run: cd tests/node && AGUI_PROVIDER_BASES=responses=http://127.0.0.1:8787 node --test providers.test.mjs

import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { HttpAgent as HttpAgent100 } from "@ag-ui/client";
import { HttpAgent as HttpAgent0059 } from "client-0059";
import { saveCapture } from "./capture.mjs";

const BASES = (process.env.AGUI_PROVIDER_BASES || "")
  .split(",")
  .filter(Boolean)
  .map((entry) => entry.split("="));
const CAPTURE_DIR = process.env.CAPTURE_DIR || "";
delete process.env.SUPPRESS_TRANSFORMATION_WARNINGS;

const COLOR_TOOL = {
  name: "change-background-color",
  description: "Change the page's background colour",
  parameters: { type: "object", properties: { color: { type: "string" } }, required: ["color"] },
};

// Any console output of a client is a failure: the clients warn about what they cannot apply.
const consoleLog = [];
for (const level of ["warn", "error"]) {
  const real = console[level];
  console[level] = (...args) => {
    consoleLog.push(`${level}: ${args.map(String).join(" ")}`);
    real.apply(console, args);
  };
}

class Session {
  constructor(HttpAgent, base, name, userText) {
    this.name = name;
    this.bodies = [];
    this.agent = new HttpAgent({
      url: `${base}/agent`,
      threadId: randomUUID(),
      initialMessages: [{ id: randomUUID(), role: "user", content: userText }],
      fetch: async (url, init) => {
        const response = await fetch(url, init);
        const text = await response.text();
        this.bodies.push(text);
        if (CAPTURE_DIR) {
          saveCapture(CAPTURE_DIR, `providers-${this.name}-${this.bodies.length}`, text, init?.body);
        }
        return new Response(text, { status: response.status, headers: response.headers });
      },
    });
  }

  async run() {
    const events = [];
    const before = consoleLog.length;
    await this.agent.runAgent(
      { runId: randomUUID(), tools: [COLOR_TOOL], context: [] },
      { onEvent: ({ event }) => events.push(structuredClone(event)) },
    );
    assert.deepEqual(consoleLog.slice(before), [], `${this.name}: the client printed something`);
    assert.equal(events.at(-1).type, "RUN_FINISHED", `${this.name}: ${events.map((e) => e.type)}`);
    return events;
  }
}

const CLIENTS = [
  ["1.0.0", HttpAgent100],
  ["0.0.59", HttpAgent0059],
];

for (const [provider, base] of BASES) {
  for (const [version, HttpAgent] of CLIENTS) {
    test(`${provider} via @ag-ui/client ${version}: reasoning, then a server tool and its answer`, async () => {
      const session = new Session(HttpAgent, base, `${provider}-${version}-time`, "[time] what time is it?");
      const events = await session.run();
      const kinds = events.map((e) => e.type);
      assert.ok(kinds.includes("TOOL_CALL_RESULT"), kinds.join(" "));
      const finished = events.at(-1);
      assert.ok(Array.isArray(finished.usage) && finished.usage.length > 0, "usage in RUN_FINISHED");
      assert.ok(finished.usage.every((entry) => entry.inputTokens > 0), JSON.stringify(finished.usage));
      const messages = session.agent.messages;
      const call = messages.flatMap((m) => m.toolCalls || []).find((c) => c.function.name === "get_current_time");
      assert.ok(call, "the call is in the client's history");
      const reasoning = messages.filter((m) => m.role === "reasoning");
      // Whatever the provider needs back the client holds: the encrypted reasoning, or the call's.
      assert.ok(
        reasoning.some((m) => typeof m.encryptedValue === "string") || typeof call.encryptedValue === "string",
        JSON.stringify(messages),
      );
      const last = messages.at(-1);
      assert.equal(last.role, "assistant");
      assert.match(last.content, /^Done: /);
    });

    test(`${provider} via @ag-ui/client ${version}: a frontend tool ends the run, the answer resumes it`, async () => {
      const session = new Session(HttpAgent, base, `${provider}-${version}-color`, "[color] make it green");
      const first = await session.run();
      const kinds = first.map((e) => e.type);
      assert.equal(kinds.at(-2), "TOOL_CALL_END", kinds.join(" "));
      const start = first.find((e) => e.type === "TOOL_CALL_START");
      assert.equal(start.toolCallName, "change-background-color");
      session.agent.addMessage({ id: randomUUID(), role: "tool", toolCallId: start.toolCallId, content: "green" });
      await session.run();
      const last = session.agent.messages.at(-1);
      assert.equal(last.role, "assistant");
      assert.equal(last.content, "Done: green");
    });
  }
}
