// ResumableHttpAgent against a scripted in-process server: no agui-lambda needed.
// Run: npm test (builds dist/ first).
import { describe, test, before, after, beforeEach } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { ResumableHttpAgent, SseParser } from "../dist/index.js";

const T = "thread-1";
const R = "run-1";
const M = "msg-1";
const WORDS = "one two three four five six seven eight nine ten".split(" ");

/** The whole run: RUN_STARTED, a text message of WORDS, RUN_FINISHED; ids 1..n. */
function runEvents(terminal = { type: "RUN_FINISHED", threadId: T, runId: R }) {
  return [
    { type: "RUN_STARTED", threadId: T, runId: R },
    { type: "TEXT_MESSAGE_START", messageId: M, role: "assistant" },
    ...WORDS.map((w, i) => ({ type: "TEXT_MESSAGE_CONTENT", messageId: M, delta: (i ? " " : "") + w })),
    { type: "TEXT_MESSAGE_END", messageId: M },
    terminal,
  ];
}
const frame = (id, event) => `id: ${id}\ndata: ${JSON.stringify(event)}\n\n`;
const FULL_TEXT = WORDS.join(" ");

// ---------------------------------------------------------------------------------------
// A scripted server. `script` decides, per request, what to answer.

let server;
let base;
let requests = [];
let script = {};

before(async () => {
  server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const entry = { method: req.method, url: req.url, headers: req.headers, body };
      requests.push(entry);
      const handler = script[`${req.method} ${req.url}`] ?? script[req.method];
      if (!handler) {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { code: "not_found" } }));
        return;
      }
      handler(req, res, entry);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${server.address().port}`;
});

after(() => {
  server.closeAllConnections();
  server.close();
});

beforeEach(() => {
  requests = [];
  script = {};
});

const sse = (res, headers = {}) =>
  res.writeHead(200, { "content-type": "text/event-stream", "x-thread-id": T, "x-run-id": R, ...headers });

/** Sends events [from, to) with ids, then cuts the TCP connection (or ends cleanly). */
function serve(events, from, to, { cut = false, delay = 0 } = {}) {
  return (req, res) => {
    sse(res);
    let i = from;
    const next = () => {
      if (i >= to) {
        if (cut) setTimeout(() => req.socket.destroy(), 20);
        else res.end();
        return;
      }
      res.write(frame(i + 1, events[i]));
      i++;
      if (delay) setTimeout(next, delay);
      else next();
    };
    next();
  };
}

const eventsPath = `/threads/${T}/runs/${R}/events`;

function agent(options = {}) {
  const seen = [];
  const a = new ResumableHttpAgent({
    url: `${base}/agent`,
    threadId: T,
    reconnect: { initialDelayMs: 10, maxDelayMs: 40, maxRetries: 3 },
    onFrame: (f) => seen.push(f),
    ...options,
  });
  return { agent: a, seen };
}

const assistantText = (a) => a.messages.filter((m) => m.role === "assistant").map((m) => m.content).join("|");

// ---------------------------------------------------------------------------------------

describe("SseParser", () => {
  test("ids, comments, CRLF and events split across chunks", () => {
    const p = new SseParser();
    const text = ': ping\r\n\r\nid: 1\r\ndata: {"a":1}\r\n\r\nid: 2\ndata: x\ndata: y\n\nretry: 5\n\ndata: z\r\r';
    const out = [];
    for (let i = 0; i < text.length; i += 3) out.push(...p.push(new TextEncoder().encode(text.slice(i, i + 3))));
    out.push(...p.end());
    assert.deepEqual(out, [
      { id: "1", data: '{"a":1}' },
      { id: "2", data: "x\ny" },
      { data: "z" },
    ]);
  });

  test("an event not closed by a blank line is dropped at the end", () => {
    const p = new SseParser();
    assert.deepEqual(p.push('id: 1\ndata: {"a":1}\n\nid: 2\ndata: {"b"'), [{ id: "1", data: '{"a":1}' }]);
    assert.deepEqual(p.end(), []);
  });
});

describe("ResumableHttpAgent (scripted server)", () => {
  test("baseUrl is the agent url without /agent", () => {
    assert.equal(new ResumableHttpAgent({ url: "https://h/lambda-url/fn/agent/" }).baseUrl, "https://h/lambda-url/fn");
    assert.equal(new ResumableHttpAgent({ url: "https://h/" }).baseUrl, "https://h");
    assert.equal(new ResumableHttpAgent({ url: "https://h/agent", baseUrl: "https://x/" }).baseUrl, "https://x");
  });

  test("an uncut run is one request, like HttpAgent", async () => {
    const events = runEvents();
    script["POST /agent"] = serve(events, 0, events.length);
    const { agent: a, seen } = agent();
    await a.runAgent({ runId: R });
    assert.equal(assistantText(a), FULL_TEXT);
    assert.deepEqual(seen.map((f) => f.id), events.map((_, i) => String(i + 1)));
    assert.equal(requests.length, 1);
    assert.equal(a.activeRun.finished, true);
    assert.equal(a.activeRun.resumes, 0);
  });

  for (const cut of [true, false]) {
    test(`a stream ${cut ? "cut (TCP reset)" : "ended cleanly"} mid-run is resumed with Last-Event-ID`, async () => {
      const events = runEvents();
      const k = 5;
      script["POST /agent"] = serve(events, 0, k, { cut });
      // The resumed stream repeats event k: the agent must drop the duplicate.
      script[`GET ${eventsPath}`] = (req, res) => serve(events, Number(req.headers["last-event-id"]) - 1, events.length)(req, res);
      const { agent: a, seen } = agent();
      const failed = [];
      const result = await a.runAgent({ runId: R }, { onRunFailed: ({ error }) => failed.push(error) });
      assert.deepEqual(failed, []);
      assert.equal(assistantText(a), FULL_TEXT);
      assert.deepEqual(seen.map((f) => f.id), events.map((_, i) => String(i + 1)), "continuous ids, no duplicate");
      assert.deepEqual(seen.map((f) => f.source), events.map((_, i) => (i < k ? "run" : "resume")));
      const resume = requests.find((r) => r.method === "GET");
      assert.equal(resume.headers["last-event-id"], String(k));
      assert.equal(resume.headers.accept, "text/event-stream");
      assert.equal(a.activeRun.resumes, 1);
      assert.equal(result.newMessages.length, 1);
    });
  }

  test("a stream that ends with the notice that the run goes on is followed on at once, the notice never delivered", async () => {
    const events = runEvents();
    const notice = (after) =>
      `data: ${JSON.stringify({
        type: "RUN_FINISHED",
        threadId: T,
        runId: R,
        result: { continues: true, events: eventsPath, lastEventId: after },
        metadata: { "agui-lambda": { continues: { events: eventsPath, lastEventId: after } } },
      })}\n\n`;
    // Each stream carries three events, then the notice (a hand-off to the next invocation).
    const part = (from) => (req, res) => {
      sse(res);
      const to = Math.min(from + 3, events.length);
      for (let i = from; i < to; i++) res.write(frame(i + 1, events[i]));
      if (to < events.length) res.write(notice(to));
      res.end();
    };
    script["POST /agent"] = part(0);
    script[`GET ${eventsPath}`] = (req, res) => part(Number(req.headers["last-event-id"]))(req, res);
    const { agent: a, seen } = agent({ reconnect: { initialDelayMs: 1000, maxDelayMs: 1000, maxRetries: 2 } });
    const finished = [];
    const started = Date.now();
    await a.runAgent({ runId: R }, { onRunFinishedEvent: ({ result }) => finished.push(result) });
    assert.equal(assistantText(a), FULL_TEXT);
    assert.deepEqual(seen.map((f) => f.id), events.map((_, i) => String(i + 1)), "one run, its ids continuous");
    assert.equal(finished.length, 1, "only the run's own RUN_FINISHED");
    assert.equal(a.activeRun.continuations, Math.ceil(events.length / 3) - 1);
    assert.equal(a.activeRun.resumes, 0);
    assert.ok(Date.now() - started < 1000, "followed on without the reconnect backoff");
  });

  test("an event without an SSE id is placed by its metadata", async () => {
    const events = runEvents();
    script["POST /agent"] = (req, res) => {
      sse(res);
      events.slice(0, 5).forEach((event, i) => res.write(`data: ${JSON.stringify({ ...event, metadata: { "agui-lambda": { eventId: i + 1 } } })}\n\n`));
      setTimeout(() => req.socket.destroy(), 20);
    };
    script[`GET ${eventsPath}`] = (req, res) => serve(events, Number(req.headers["last-event-id"]), events.length)(req, res);
    const { agent: a } = agent();
    await a.runAgent({ runId: R });
    assert.equal(assistantText(a), FULL_TEXT);
    assert.equal(requests.find((r) => r.method === "GET").headers["last-event-id"], "5");
  });

  test("several cuts in a row are each resumed", async () => {
    const events = runEvents();
    script["POST /agent"] = serve(events, 0, 2, { cut: true });
    script[`GET ${eventsPath}`] = (req, res) => {
      const after = Number(req.headers["last-event-id"]);
      serve(events, after, Math.min(after + 3, events.length), { cut: after + 3 < events.length })(req, res);
    };
    const { agent: a, seen } = agent();
    await a.runAgent({ runId: R });
    assert.equal(assistantText(a), FULL_TEXT);
    assert.deepEqual(seen.map((f) => f.id), events.map((_, i) => String(i + 1)));
    assert.ok(a.activeRun.resumes >= 3);
  });

  test("a run that cannot be resumed (404) fails with the HTTP error", async () => {
    const events = runEvents();
    script["POST /agent"] = serve(events, 0, 4, { cut: true });
    const { agent: a } = agent();
    const failed = [];
    const origError = console.error;
    console.error = () => {};
    try {
      await assert.rejects(a.runAgent({ runId: R }, { onRunFailed: ({ error }) => failed.push(error) }), /HTTP 404/);
    } finally {
      console.error = origError;
    }
    assert.equal(failed.length, 1);
    assert.equal(requests.filter((r) => r.method === "GET").length, 1, "404 is not retried");
  });

  test("retries are bounded with backoff when the events endpoint keeps failing", async () => {
    const events = runEvents();
    script["POST /agent"] = serve(events, 0, 4, { cut: true });
    script[`GET ${eventsPath}`] = (req, res) => {
      res.writeHead(503, { "content-type": "application/json" });
      res.end('{"error":{"code":"unavailable"}}');
    };
    const { agent: a } = agent();
    const origError = console.error;
    console.error = () => {};
    const t0 = Date.now();
    try {
      await assert.rejects(a.runAgent({ runId: R }), /HTTP 503/);
    } finally {
      console.error = origError;
    }
    assert.equal(requests.filter((r) => r.method === "GET").length, 3);
    assert.ok(Date.now() - t0 >= 5 + 10 + 20 - 5, "backs off between attempts");
  });

  test("abortRun() posts cancel and ends the local run with RUN_ERROR abort", async () => {
    const events = runEvents();
    script["POST /agent"] = serve(events, 0, events.length, { delay: 50 });
    script[`POST /threads/${T}/runs/${R}/cancel`] = (req, res) => {
      res.writeHead(202, { "content-type": "application/json" });
      res.end(JSON.stringify({ threadId: T, runId: R, status: "cancelling" }));
    };
    const { agent: a } = agent();
    const types = [];
    setTimeout(() => a.abortRun(), 180);
    await a.runAgent({ runId: R }, { onEvent: ({ event }) => types.push(event.type + (event.code ? `:${event.code}` : "")) });
    assert.equal(types.at(-1), "RUN_ERROR:abort");
    const cancel = await a.lastCancel;
    assert.equal(cancel.status, 202);
    assert.deepEqual(cancel.body, { threadId: T, runId: R, status: "cancelling" });
    const post = requests.find((r) => r.url.endsWith("/cancel"));
    assert.equal(post.method, "POST");
    assert.ok(assistantText(a).length < FULL_TEXT.length);
    assert.equal(requests.filter((r) => r.method === "GET").length, 0, "an abort is not resumed");
  });

  test("cancelRun() keeps the stream for the server's terminal event", async () => {
    const cancelled = { type: "RUN_FINISHED", threadId: T, runId: R, outcome: { type: "cancelled" } };
    let stop;
    script["POST /agent"] = (req, res) => {
      sse(res);
      const events = runEvents();
      let i = 0;
      const timer = setInterval(() => {
        if (stop && events[i].type === "TEXT_MESSAGE_CONTENT") {
          res.write(frame(i + 1, { type: "TEXT_MESSAGE_END", messageId: M }));
          res.end(frame(i + 2, cancelled));
          clearInterval(timer);
          return;
        }
        res.write(frame(i + 1, events[i++]));
      }, 30);
    };
    script[`POST /threads/${T}/runs/${R}/cancel`] = (req, res) => {
      stop = true;
      res.writeHead(202, { "content-type": "application/json" });
      res.end(JSON.stringify({ threadId: T, runId: R, status: "cancelling" }));
    };
    const { agent: a } = agent();
    let outcome;
    setTimeout(() => a.cancelRun(), 150);
    await a.runAgent({ runId: R }, { onRunFinishedEvent: (p) => (outcome = p.outcome) });
    assert.equal(outcome, "cancelled");
    assert.equal((await a.lastCancel).status, 202);
    assert.ok(assistantText(a).length > 0 && assistantText(a).length < FULL_TEXT.length);
  });

  test("connectAgent() rejoins the thread's active run from its start", async () => {
    const events = runEvents();
    script[`GET /threads/${T}`] = (req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ threadId: T, messages: [], activeRunId: R }));
    };
    script[`GET ${eventsPath}`] = serve(events, 0, events.length, { delay: 5 });
    const { agent: a, seen } = agent();
    let finished = false;
    const result = await a.connectAgent(undefined, { onRunFinishedEvent: () => (finished = true) });
    assert.ok(finished);
    assert.equal(assistantText(a), FULL_TEXT);
    assert.equal(result.newMessages.length, 1);
    assert.equal(seen[0].source, "connect");
    assert.equal(requests[1].headers["last-event-id"], undefined);
  });

  test("connectAgent() with no active run resolves with nothing", async () => {
    script[`GET /threads/${T}`] = (req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ threadId: T, messages: [], activeRunId: null }));
    };
    const { agent: a, seen } = agent();
    const result = await a.connectAgent();
    assert.deepEqual(result.newMessages, []);
    assert.equal(seen.length, 0);
    assert.equal(requests.length, 1);
  });

  test("connectAgent() on an unknown thread resolves with nothing", async () => {
    const { agent: a } = agent();
    const result = await a.connectAgent();
    assert.deepEqual(result.newMessages, []);
  });

  test("a follower that is cut resumes too", async () => {
    const events = runEvents();
    script[`GET /threads/${T}`] = (req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ activeRunId: R }));
    };
    script[`GET ${eventsPath}`] = (req, res) => {
      const after = Number(req.headers["last-event-id"] ?? 0);
      serve(events, after, after === 0 ? 6 : events.length, { cut: after === 0 })(req, res);
    };
    const { agent: a, seen } = agent();
    await a.connectAgent();
    assert.equal(assistantText(a), FULL_TEXT);
    assert.deepEqual(seen.map((f) => f.id), events.map((_, i) => String(i + 1)));
    assert.equal(requests.at(-1).headers["last-event-id"], "6");
  });
});
