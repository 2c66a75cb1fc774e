// ResumableHttpAgent sends only what the server does not hold: 600 turns of ~1,500 characters
// each way on one thread, every request body under 8 KB, and the agent's messages equal to the
// server's history at the end. Then the cases where it must not lose track: another agent (a
// second tab) adds to the thread, and a reload (messages from the server, then connectAgent()).
//
// Environment:
//   AGUI_FAST_BASE      a server whose model answers "[long-thread]" at once (aimock with
//                       tests/fixtures/aimock-openai.json, as scripts/test.sh starts it); without
//                       it these tests are skipped
//   LONG_THREAD_TURNS   optional, default 600
//   AGUI_LIVE_REQUIRED  set to 1 to fail (instead of skip) when AGUI_FAST_BASE is missing
//
// Run: AGUI_FAST_BASE=http://127.0.0.1:8787 npm test
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { ResumableHttpAgent } from "../dist/index.js";

const BASE = (process.env.AGUI_FAST_BASE ?? "").replace(/\/+$/, "");
const TURNS = Number(process.env.LONG_THREAD_TURNS || 600);
const LIMIT = 8 * 1024;

const skip = BASE ? false : "AGUI_FAST_BASE is not set";
if (!BASE && process.env.AGUI_LIVE_REQUIRED === "1") {
  throw new Error("AGUI_LIVE_REQUIRED=1 but AGUI_FAST_BASE is not set");
}

function paragraph(turn) {
  const head = `[long-thread] turn ${turn}. `;
  const words = "Here is what happened today, and what I would like you to keep in mind for the rest of the week. ";
  return (head + words.repeat(16)).slice(0, 1500);
}

/** An agent on `threadId` that records the size of every run request it sends. */
function agentOn(threadId) {
  const sizes = [];
  const agent = new ResumableHttpAgent({
    url: `${BASE}/agent`,
    threadId,
    fetch: (url, init) => {
      if (init?.method === "POST" && String(url).endsWith("/agent")) sizes.push(Buffer.byteLength(init.body ?? ""));
      return fetch(url, init);
    },
  });
  return { agent, sizes };
}

async function turn(agent, text) {
  agent.addMessage({ id: randomUUID(), role: "user", content: text });
  let failure;
  await agent.runAgent({ runId: randomUUID(), tools: [], context: [] }, { onRunErrorEvent: ({ event }) => void (failure = event) });
  assert.equal(failure, undefined, JSON.stringify(failure));
}

/** The server's history, every page: `[id, role, content]` per message. */
async function stored(threadId) {
  const messages = [];
  let after = null;
  do {
    const query = `limit=500${after ? `&after=${encodeURIComponent(after)}` : ""}`;
    const response = await fetch(`${BASE}/threads/${encodeURIComponent(threadId)}?${query}`);
    assert.equal(response.status, 200);
    const page = await response.json();
    messages.push(...page.messages);
    after = page.next ?? null;
  } while (after);
  return messages;
}

const triples = (messages) => messages.map((m) => [m.id, m.role, m.content ?? ""]);

describe("ResumableHttpAgent on a long thread", { skip }, () => {
  test(`${TURNS} turns of 1,500 characters: every request under 8 KB, the messages equal the server's`, async () => {
    const threadId = randomUUID();
    const { agent, sizes } = agentOn(threadId);
    const started = Date.now();
    for (let n = 0; n < TURNS; n++) await turn(agent, paragraph(n));
    assert.equal(sizes.length, TURNS);
    const largest = Math.max(...sizes);
    assert.ok(largest < LIMIT, `the largest request carried ${largest} bytes`);
    assert.equal(agent.messages.length, 2 * TURNS);
    assert.deepEqual(triples(agent.messages), triples(await stored(threadId)));
    console.log(`${TURNS} turns in ${((Date.now() - started) / 1000).toFixed(1)} s; largest request ${largest} bytes`);
  });

  test("behind (another agent added to the thread): the server's snapshot brings it up to date", async () => {
    const threadId = randomUUID();
    const first = agentOn(threadId);
    await turn(first.agent, paragraph(0));
    // A second tab: the thread's messages, then its own turn.
    const second = agentOn(threadId);
    second.agent.setMessages(await stored(threadId));
    await second.agent.connectAgent();
    await turn(second.agent, paragraph(1));
    assert.ok(second.sizes.at(-1) < LIMIT, `${second.sizes.at(-1)} bytes`);
    // The first tab, behind by two messages, sends its next turn.
    let snapshot;
    first.agent.addMessage({ id: randomUUID(), role: "user", content: paragraph(2) });
    await first.agent.runAgent(
      { runId: randomUUID(), tools: [], context: [] },
      { onMessagesSnapshotEvent: ({ event }) => void (snapshot = event) },
    );
    assert.ok(first.sizes.at(-1) < LIMIT, `${first.sizes.at(-1)} bytes`);
    assert.ok(snapshot, "the server sent MESSAGES_SNAPSHOT");
    const history = await stored(threadId);
    assert.equal(history.length, 6);
    assert.deepEqual(triples(first.agent.messages), triples(history));
    // And it is up to date again: its next request is small and gets no snapshot.
    snapshot = undefined;
    first.agent.addMessage({ id: randomUUID(), role: "user", content: paragraph(3) });
    await first.agent.runAgent(
      { runId: randomUUID(), tools: [], context: [] },
      { onMessagesSnapshotEvent: ({ event }) => void (snapshot = event) },
    );
    assert.equal(snapshot, undefined);
    assert.deepEqual(triples(first.agent.messages), triples(await stored(threadId)));
  });

  test("after a reload (messages from the server, then connectAgent()) it sends only what is new", async () => {
    const threadId = randomUUID();
    const before = agentOn(threadId);
    for (let n = 0; n < 5; n++) await turn(before.agent, paragraph(n));
    const reloaded = agentOn(threadId);
    reloaded.agent.setMessages(await stored(threadId));
    await reloaded.agent.connectAgent();
    await turn(reloaded.agent, paragraph(5));
    assert.equal(reloaded.sizes.length, 1);
    assert.ok(reloaded.sizes[0] < LIMIT, `${reloaded.sizes[0]} bytes`);
    assert.deepEqual(triples(reloaded.agent.messages), triples(await stored(threadId)));
  });
});
