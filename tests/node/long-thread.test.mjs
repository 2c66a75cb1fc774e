// A conversation that outgrows a request: `HttpAgent` of @ag-ui/client 1.0.0 and of 0.0.59
// (CopilotKit's pin) resend the whole thread in every RunAgentInput. 600 turns of ~1,500
// characters each way on one thread (the last request is about 1.9 MB): every turn must
// finish, and the stored history must equal the client's messages.
//
// The model is aimock's "[long-thread]" fixture (a 1,500-character answer, no delay).
//
// Environment:
//   AGUI_BASE         (required) the local server, e.g. http://127.0.0.1:8787
//   LONG_THREAD_TURNS (optional) turns per client, default 600
//
// Run: cd tests/node && AGUI_BASE=… node --test long-thread.test.mjs

import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { HttpAgent as HttpAgent100 } from "@ag-ui/client";
import { HttpAgent as HttpAgent0059 } from "client-0059";

const BASE = process.env.AGUI_BASE;
const TURNS = Number(process.env.LONG_THREAD_TURNS || 600);

/** A user message of about 1,500 characters, named by its turn. */
function paragraph(turn) {
  const head = `[long-thread] turn ${turn}. `;
  const words = "Here is what happened today, and what I would like you to keep in mind for the rest of the week. ";
  return (head + words.repeat(16)).slice(0, 1500);
}

/** The thread as stored, every page of it: `[id, role, content]` per message. */
async function storedHistory(base, threadId) {
  const messages = [];
  let after = null;
  do {
    const query = `limit=500${after ? `&after=${encodeURIComponent(after)}` : ""}`;
    const response = await fetch(`${base}/threads/${encodeURIComponent(threadId)}?${query}`);
    assert.equal(response.status, 200, await response.clone().text());
    const page = await response.json();
    messages.push(...page.messages);
    after = page.next ?? null;
  } while (after);
  return messages.map((m) => [m.id, m.role, m.content ?? ""]);
}

const clientHistory = (messages) => messages.map((m) => [m.id, m.role, m.content ?? ""]);

/** `HttpAgent` that records the size of every request body it sends (its own `requestInit`,
 * so the two clients can run side by side). */
function measured(HttpAgent) {
  return class extends HttpAgent {
    sizes = [];
    requestInit(input) {
      const init = super.requestInit(input);
      this.sizes.push(Buffer.byteLength(init.body ?? ""));
      return init;
    }
  };
}

// The two clients' threads run side by side: each turn is the client's work, then the
// server's, so two threads keep two cores busy.
describe("full-history clients", { concurrency: 2 }, () => {
  for (const { version, HttpAgent } of [
    { version: "1.0.0", HttpAgent: HttpAgent100 },
    { version: "0.0.59", HttpAgent: HttpAgent0059 },
  ]) {
    test(`HttpAgent ${version}: ${TURNS} turns of 1,500 characters on one thread, whole history resent every turn`, async () => {
      assert.ok(BASE, "AGUI_BASE must name the server");
      const url = `${BASE}/agent`;
      const threadId = randomUUID();
      const agent = new (measured(HttpAgent))({ url, threadId });
      const started = Date.now();
      for (let turn = 0; turn < TURNS; turn++) {
        agent.addMessage({ id: randomUUID(), role: "user", content: paragraph(turn) });
        let failure;
        await agent.runAgent(
          { runId: randomUUID(), tools: [], context: [] },
          { onRunErrorEvent: ({ event }) => void (failure = event) },
        );
        assert.equal(failure, undefined, `turn ${turn}: ${JSON.stringify(failure)}`);
        const last = agent.messages.at(-1);
        assert.equal(last.role, "assistant", `turn ${turn} was answered`);
        assert.ok(last.content.length >= 1400, `turn ${turn}: a paragraph back`);
      }
      const sizes = agent.sizes;
      const seconds = (Date.now() - started) / 1000;
      assert.equal(sizes.length, TURNS);
      assert.equal(agent.messages.length, 2 * TURNS);
      if (TURNS === 600) assert.ok(sizes.at(-1) > 1_800_000, `the last request carried ${sizes.at(-1)} bytes`);
      assert.deepEqual(await storedHistory(BASE, threadId), clientHistory(agent.messages));
      console.log(
        `HttpAgent ${version}: ${TURNS} turns in ${seconds.toFixed(1)} s; last request ${sizes.at(-1)} bytes, ` +
          `${(sizes.reduce((a, b) => a + b, 0) / 1e6).toFixed(0)} MB sent in all`,
      );
    });
  }
});
