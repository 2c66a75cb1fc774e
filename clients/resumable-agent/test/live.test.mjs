// ResumableHttpAgent against a running agui-lambda server (its offline demo model).
//
// Environment:
//   AGUI_BASE           the server's base URL, e.g. http://127.0.0.1:8787 (or .../lambda-url/<fn>
//                       under `cargo lambda watch`); without it these tests are skipped
//   AGUI_AUTHORIZATION  optional Authorization header value (e.g. "Bearer <api key>")
//   LIVE_TIMEOUT_MS     optional per-test limit, default 60000
//   AGUI_LIVE_REQUIRED  set to 1 to fail (instead of skip) when AGUI_BASE is missing
//
// The demo model repeats the user's message word by word (~30 ms a word), so a long prompt
// gives a stream long enough to cut, stop or join in the middle.
//
// Run: AGUI_BASE=http://127.0.0.1:8787 npm test
import { describe, test, after } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import { randomUUID } from "node:crypto";
import { HttpAgent } from "@ag-ui/client";
import { ResumableHttpAgent } from "../dist/index.js";

const BASE = (process.env.AGUI_BASE ?? "").replace(/\/+$/, "");
const AUTH = process.env.AGUI_AUTHORIZATION;
const HEADERS = AUTH ? { Authorization: AUTH } : {};
const TIMEOUT = Number(process.env.LIVE_TIMEOUT_MS || 60000);
const DEMO_PREFIX = "This is agui-lambda's scripted demo model (no OPENAI_API_KEY is set). You said: ";

const skip = BASE ? false : "AGUI_BASE is not set";
if (!BASE && process.env.AGUI_LIVE_REQUIRED === "1") {
  throw new Error("AGUI_LIVE_REQUIRED=1 but AGUI_BASE is not set");
}

// Neither agent may leave an unhandled rejection behind (plain HttpAgent does on a cut
// connection, which is why no plain agent is ever cut here).
const unhandled = [];
process.on("unhandledRejection", (error) => unhandled.push(error));
after(() => assert.deepEqual(unhandled.map(String), []));

/** n words of text, numbered so the answer is long and every word is different. */
function prompt(words) {
  return Array.from({ length: words }, (_, i) => `word${i + 1}`).join(" ");
}

function userMessage(content) {
  return { id: randomUUID(), role: "user", content };
}

/** Messages without ids: what must match between an uncut and a resumed run. */
function normalise(messages) {
  return messages.map((m) => ({
    role: m.role,
    content: m.content ?? null,
    toolCalls: (m.toolCalls ?? []).map((c) => ({ name: c.function.name, arguments: c.function.arguments })),
    ...(m.role === "tool" ? { toolCallContent: m.content } : {}),
  }));
}

async function getThread(threadId) {
  const response = await fetch(`${BASE}/threads/${encodeURIComponent(threadId)}`, { headers: HEADERS });
  assert.equal(response.status, 200, `GET /threads/${threadId}`);
  return response.json();
}

async function waitFor(what, check, { timeoutMs = 5000, everyMs = 50 } = {}) {
  const start = Date.now();
  for (;;) {
    const value = await check();
    if (value) return Date.now() - start;
    if (Date.now() - start > timeoutMs) assert.fail(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * A TCP proxy on 127.0.0.1 in front of the server. With `cutAfterBytes`, the FIRST connection's
 * response is cut (TCP reset, both sides) after that many bytes; later connections pass through.
 */
async function startProxy({ cutAfterBytes } = {}) {
  const target = new URL(BASE);
  const port = Number(target.port || (target.protocol === "https:" ? 443 : 80));
  const stats = { connections: 0, firstResponseBytes: 0, cut: false };
  const sockets = new Set();
  const server = net.createServer((client) => {
    const index = stats.connections++;
    const upstream = net.connect(port, target.hostname);
    sockets.add(client).add(upstream);
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("error", close);
    upstream.on("error", close);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.end());
    client.on("data", (chunk) => upstream.write(chunk));
    upstream.on("data", (chunk) => {
      if (index !== 0) {
        client.write(chunk);
        return;
      }
      if (stats.cut) return;
      if (cutAfterBytes !== undefined && stats.firstResponseBytes + chunk.length >= cutAfterBytes) {
        const part = chunk.subarray(0, cutAfterBytes - stats.firstResponseBytes);
        stats.firstResponseBytes += part.length;
        stats.cut = true;
        client.write(part, () => {
          if (typeof client.resetAndDestroy === "function") client.resetAndDestroy();
          else client.destroy();
          upstream.destroy();
        });
        return;
      }
      stats.firstResponseBytes += chunk.length;
      client.write(chunk);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const proxied = new URL(BASE);
  proxied.protocol = "http:";
  proxied.hostname = "127.0.0.1";
  proxied.port = String(server.address().port);
  return {
    base: proxied.toString().replace(/\/+$/, ""),
    stats,
    close: () => {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

/** A ResumableHttpAgent that records its frames and every request it makes. */
function resumable({ base = BASE, threadId, reconnect } = {}) {
  const frames = [];
  const requests = [];
  const agent = new ResumableHttpAgent({
    url: `${base}/agent`,
    threadId,
    headers: HEADERS,
    reconnect: reconnect ?? { initialDelayMs: 100, maxDelayMs: 1000, maxRetries: 6 },
    fetch: (url, init) => {
      requests.push({ url: String(url), method: init?.method ?? "GET", headers: { ...(init?.headers ?? {}) } });
      return fetch(url, init);
    },
    onFrame: (frame) => frames.push(frame),
  });
  return { agent, frames, requests };
}

/** Ids of the frames as numbers; asserts they are exactly 1..n. */
function assertContinuousIds(frames) {
  const ids = frames.map((f) => Number(f.id));
  assert.deepEqual(ids, ids.map((_, i) => i + 1), "ids 1..n, no gap and no duplicate");
}

const assistantOf = (messages) => messages.filter((m) => m.role === "assistant");

describe("ResumableHttpAgent against agui-lambda", { skip, timeout: TIMEOUT * 8 }, () => {
  // ---------------------------------------------------------------------------------
  // A connection cut mid-stream: same final messages as an uncut run.

  const cases = [
    { name: "a long answer", message: () => userMessage(prompt(80)), tools: [], cuts: [0.15, 0.5, 0.9] },
    {
      name: "a frontend tool call",
      message: () => userMessage(`Please confirm action: ${prompt(20)}`),
      tools: [
        {
          name: "confirmAction",
          description: "Ask the user to confirm an action.",
          parameters: { type: "object", properties: { action: { type: "string" } } },
        },
      ],
      cuts: [0.5],
    },
  ];

  for (const c of cases) {
    for (const fraction of c.cuts) {
      test(`${c.name}: a TCP cut after ${Math.round(fraction * 100)}% of the first response is resumed`, { timeout: TIMEOUT }, async () => {
        const message = c.message();

        // The uncut run, plain HttpAgent, through a proxy that only counts bytes.
        const counter = await startProxy();
        let reference;
        let referenceBytes;
        try {
          reference = new HttpAgent({ url: `${counter.base}/agent`, threadId: randomUUID(), headers: HEADERS });
          reference.messages = [{ ...message, id: randomUUID() }];
          await reference.runAgent({ tools: c.tools });
          referenceBytes = counter.stats.firstResponseBytes;
        } finally {
          counter.close();
        }
        assert.ok(assistantOf(reference.messages).length > 0, "the uncut run answered");

        // The same prompt on a fresh thread, through a proxy that cuts the first response.
        const cutAfterBytes = Math.max(1, Math.floor(referenceBytes * fraction));
        const proxy = await startProxy({ cutAfterBytes });
        const { agent, frames, requests } = resumable({ base: proxy.base, threadId: randomUUID() });
        agent.messages = [{ ...message, id: randomUUID() }];
        const failures = [];
        let terminal;
        try {
          await agent.runAgent(
            { tools: c.tools },
            {
              onRunFailed: ({ error }) => failures.push(error),
              onRunFinishedEvent: (p) => (terminal = p.outcome),
            },
          );
        } finally {
          proxy.close();
        }

        assert.deepEqual(failures, []);
        assert.ok(proxy.stats.cut, `the proxy cut the first response (${cutAfterBytes} of ${referenceBytes} bytes)`);
        assert.equal(terminal, "success");
        assert.ok(agent.activeRun.resumes >= 1, "the stream was resumed");
        const resume = requests.find((r) => r.url.includes("/events"));
        assert.ok(resume, "reconnected to the events endpoint");
        if (frames.some((f) => f.source === "run")) {
          const lastBeforeCut = frames.filter((f) => f.source === "run").at(-1).id;
          assert.equal(resume.headers["Last-Event-ID"], lastBeforeCut);
        }
        assertContinuousIds(frames);
        assert.equal(frames[0].event.type, "RUN_STARTED");
        assert.equal(frames.at(-1).event.type, "RUN_FINISHED");
        assert.deepEqual(normalise(agent.messages), normalise(reference.messages));
      });
    }
  }

  // ---------------------------------------------------------------------------------
  // Stop.

  test("abortRun() mid-run cancels the run on the server; the thread is free within 2 s", { timeout: TIMEOUT }, async () => {
    const threadId = randomUUID();
    const text = prompt(200); // ~6 s of streaming
    const { agent, requests } = resumable({ threadId });
    agent.messages = [userMessage(text)];
    let contents = 0;
    let abortedAt;
    const types = [];
    await agent.runAgent(undefined, {
      onEvent: ({ event }) => {
        types.push(event.type + (event.code ? `:${event.code}` : ""));
        if (event.type === "TEXT_MESSAGE_CONTENT" && ++contents === 10) {
          abortedAt = Date.now();
          agent.abortRun();
        }
      },
    });
    assert.ok(abortedAt, "the run got far enough to be stopped");
    assert.equal(types.at(-1), "RUN_ERROR:abort", "the local run ends as HttpAgent's does");

    const runId = agent.activeRun.runId;
    const cancel = requests.find((r) => r.method === "POST" && r.url.endsWith(`/threads/${threadId}/runs/${runId}/cancel`));
    assert.ok(cancel, "the cancel endpoint was called");
    const answer = await agent.lastCancel;
    assert.ok([200, 202].includes(answer.status), `cancel answered ${answer.status}: ${JSON.stringify(answer.body)}`);
    assert.equal(answer.body.runId, runId);

    await waitFor("activeRunId null", async () => (await getThread(threadId)).activeRunId === null, { timeoutMs: 2000 });
    assert.ok(Date.now() - abortedAt < 2500, "released within ~2 s of the abort");

    // The partial answer, as streamed so far, is stored.
    const stored = await getThread(threadId);
    const partial = assistantOf(stored.messages).at(-1);
    assert.ok(partial && typeof partial.content === "string" && partial.content.length > 0, "a partial answer is stored");
    if (partial.content.startsWith(DEMO_PREFIX.slice(0, 30))) {
      const full = DEMO_PREFIX + text;
      assert.ok(full.startsWith(partial.content.trimEnd()), "the stored answer is a prefix of the full one");
      assert.ok(partial.content.trimEnd().length < full.length, "and it is partial");
    }

    // A new run on the same thread succeeds.
    agent.addMessage(userMessage("hello again"));
    let outcome;
    await agent.runAgent(undefined, { onRunFinishedEvent: (p) => (outcome = p.outcome) });
    assert.equal(outcome, "success");
    const last = assistantOf(agent.messages).at(-1);
    assert.match(String(last.content), /hello again/);
  });

  test("cancelRun() ends the stream and a follower's with RUN_FINISHED cancelled", { timeout: TIMEOUT }, async () => {
    const threadId = randomUUID();
    const { agent } = resumable({ threadId });
    agent.messages = [userMessage(prompt(200))];
    let contents = 0;
    let ownOutcome;
    let follower;
    let followerDone;
    const run = agent.runAgent(undefined, {
      onRunFinishedEvent: (p) => (ownOutcome = p.outcome),
      onEvent: ({ event }) => {
        if (event.type !== "TEXT_MESSAGE_CONTENT") return;
        contents++;
        if (contents === 3) {
          follower = resumable({ threadId });
          let outcome;
          followerDone = follower.agent
            .connectAgent(undefined, { onRunFinishedEvent: (p) => (outcome = p.outcome) })
            .then(() => outcome);
          followerDone.catch(() => {});
        }
        if (contents === 15) void agent.cancelRun();
      },
    });
    await run;
    assert.equal(ownOutcome, "cancelled");
    assert.equal((await agent.lastCancel).status, 202);
    assert.equal(await followerDone, "cancelled", "the follower ends with the same terminal event");
    assert.equal(follower.frames.at(-1).event.type, "RUN_FINISHED");
    assertContinuousIds(follower.frames);
    assert.deepEqual(
      normalise(assistantOf(follower.agent.messages)),
      normalise(assistantOf(agent.messages)),
      "the follower saw the same partial answer",
    );
    await waitFor("activeRunId null", async () => (await getThread(threadId)).activeRunId === null, { timeoutMs: 2000 });
  });

  // ---------------------------------------------------------------------------------
  // Rejoin.

  test("connectAgent() joins a run started by another agent and ends with its terminal event", { timeout: TIMEOUT }, async () => {
    const threadId = randomUUID();
    const starter = new HttpAgent({ url: `${BASE}/agent`, threadId, headers: HEADERS });
    starter.messages = [userMessage(prompt(60))];
    let runId;
    let contents = 0;
    let joined;
    const started = starter.runAgent(undefined, {
      onRunStartedEvent: ({ event }) => (runId = event.runId),
      onEvent: ({ event }) => {
        if (event.type === "TEXT_MESSAGE_CONTENT" && ++contents === 5) {
          joined = (async () => {
            // As after a page reload: the thread says which run is active.
            const thread = await getThread(threadId);
            assert.equal(thread.activeRunId, runId, "GET /threads/{id} names the active run");
            const { agent, frames } = resumable({ threadId });
            const result = await agent.connectAgent();
            return { agent, frames, result };
          })();
          joined.catch(() => {}); // awaited below; not an unhandled rejection meanwhile
        }
      },
    });
    await started;
    assert.ok(joined, "the run was long enough to join");
    const { agent, frames, result } = await joined;

    assert.equal(agent.activeRun.runId, runId);
    assert.equal(frames[0].event.type, "RUN_STARTED");
    assert.equal(frames.at(-1).event.type, "RUN_FINISHED");
    assertContinuousIds(frames);
    assert.ok(frames.length > contents, "it received the events still to come");
    assert.ok(result.newMessages.length > 0);
    assert.deepEqual(normalise(assistantOf(agent.messages)), normalise(assistantOf(starter.messages)));

    // Once the run has ended there is nothing to join.
    await waitFor("activeRunId null", async () => (await getThread(threadId)).activeRunId === null);
    const late = resumable({ threadId });
    const nothing = await late.agent.connectAgent();
    assert.deepEqual(nothing.newMessages, []);
    assert.equal(late.frames.length, 0);
  });
});
