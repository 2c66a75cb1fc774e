// A conversation that outgrows a small model window, through both real clients: the runs that
// compact the thread stream ACTIVITY_SNAPSHOT (activityType "context-compaction"), and
// @ag-ui/client 1.0.0 and 0.0.59 (CopilotKit's pin) parse those streams, finish every run and
// keep sending the conversation (activity messages included, for 0.0.59) without an error.
//
// Environment:
//   AGUI_BASE   (required) the function's base URL; the server must run on the aimock fixtures
//               with MODEL_CONTEXT_TOKENS=1000 and MAX_OUTPUT_TOKENS=100
//   CAPTURE_DIR (optional) every response body is saved there as compaction-<name>-<n>.sse
//
// Run: cd tests/node && npm ci && AGUI_BASE=... node --test compaction.test.mjs

import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { HttpAgent as HttpAgent100 } from "@ag-ui/client";
import { HttpAgent as HttpAgent0059 } from "client-0059";
import { saveCapture } from "./capture.mjs";

const BASE = process.env.AGUI_BASE;
const CAPTURE_DIR = process.env.CAPTURE_DIR || "";

async function converse(HttpAgent, name, turns) {
  const bodies = [];
  const agent = new HttpAgent({
    url: `${BASE}/agent`,
    threadId: randomUUID(),
    fetch: async (url, init) => {
      const response = await fetch(url, init);
      const text = await response.text();
      bodies.push(text);
      if (CAPTURE_DIR) {
        saveCapture(CAPTURE_DIR, `compaction-${name}-${bodies.length}`, text, init?.body);
      }
      return new Response(text, { status: response.status, headers: response.headers });
    },
  });
  const activities = [];
  for (let turn = 1; turn <= turns; turn++) {
    const filler = "The user goes on about the plan, its steps and its many details. ".repeat(9);
    agent.addMessage({ id: randomUUID(), role: "user", content: `[compaction test] turn ${turn}.\n${filler}` });
    const errors = [];
    await agent.runAgent(
      {},
      {
        onRunErrorEvent: ({ event }) => errors.push(event),
        onEvent: ({ event }) => {
          if (event.type === "ACTIVITY_SNAPSHOT") activities.push(event);
        },
      },
    );
    assert.deepEqual(errors, [], `turn ${turn}`);
    assert.equal(agent.messages.at(-1).role, "assistant", `turn ${turn} was answered`);
  }
  return { agent, activities, bodies };
}

for (const [name, HttpAgent] of [
  ["1.0.0", HttpAgent100],
  ["0.0.59", HttpAgent0059],
]) {
  test(`${name}: runs that compact the thread stream an activity the client parses`, async () => {
    const { agent, activities, bodies } = await converse(HttpAgent, name, 10);
    assert.ok(activities.length > 0, "a run compacted the thread");
    const activity = activities[0];
    assert.equal(activity.activityType, "context-compaction");
    assert.ok(activity.content.tokensAfter < activity.content.tokensBefore, JSON.stringify(activity));
    assert.ok(["summarized", "cleared-tool-results", "dropped"].includes(activity.content.strategy));
    assert.equal(bodies.length, 10);
    // The thread on the server keeps every message the client holds.
    const stored = await (await fetch(`${BASE}/threads/${agent.threadId}?limit=500`)).json();
    const conversational = agent.messages.filter((message) => ["user", "assistant"].includes(message.role));
    assert.equal(stored.messages.length, conversational.length);
    assert.ok(stored.checkpoint.coversMessages > 0, JSON.stringify(stored.checkpoint));
  });
}
