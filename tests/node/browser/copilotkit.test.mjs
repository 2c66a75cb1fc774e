// The CopilotKit example (examples/copilotkit) in a real browser: Debian's chromium driven by
// Playwright. The example's own server (server.mjs: the built app and the CopilotKit runtime)
// runs here on a free port, its agent being the local agui-lambda server at AGUI_BASE, whose model
// is aimock (the "[copilotkit] …" fixtures of tests/fixtures/aimock-openai.json) and whose
// get_current_time needs approval.
//
// Environment:
//   AGUI_BASE      (required) the agui-lambda server, e.g. http://127.0.0.1:8787, started with
//                  APPROVAL_REQUIRED_TOOLS=get_current_time
//   CHROMIUM_PATH  (optional) the browser, default /usr/bin/chromium
//   SCREENSHOT_DIR (optional) one screenshot per scenario lands there (CI keeps them)
// The example must be installed and built first (scripts/install-test-tools.sh does it:
// `npm ci && npm run build` in examples/copilotkit); this test builds nothing.
//
// Run: cd tests/node && AGUI_BASE=… node --test --test-concurrency=1 browser/

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "../../..");
const EXAMPLE = path.join(ROOT, "examples/copilotkit");
const BASE = process.env.AGUI_BASE;
const CHROMIUM_PATH = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const SCREENSHOT_DIR = process.env.SCREENSHOT_DIR || "";
const TIMEOUT = 20_000;

// The model's scripted answers, read from the fixtures so the test and aimock agree.
const FIXTURES = JSON.parse(readFileSync(path.join(ROOT, "tests/fixtures/aimock-openai.json"), "utf8")).fixtures;
function answerTo(userMessage, extra = {}) {
  const fixture = FIXTURES.find(
    (f) =>
      f.match.userMessage === userMessage &&
      Object.entries(extra).every(([key, value]) => f.match[key] === value) &&
      typeof f.response.content === "string",
  );
  assert.ok(fixture, `no aimock fixture answers ${JSON.stringify(userMessage)} ${JSON.stringify(extra)}`);
  return fixture.response.content;
}
const POEM = "[copilotkit] write a short poem";
const SAGA = "[copilotkit] recite the long saga";
const PAINT = "[copilotkit] paint the page yellow";
const CLOCK = "[copilotkit] check the clock with approval";

// CopilotChat's own elements (@copilotkit/react-core 1.74 v2) and the example's.
const TEXTAREA = '[data-testid="copilot-chat-textarea"]';
const SEND = '[data-testid="copilot-send-button"]';
// While a run is in progress the send button is CopilotChat's Stop button (a square icon).
const STOP = `${SEND}:has(svg.lucide-square)`;
const ASSISTANT = '[data-testid="copilot-assistant-message"]';
const USER = '[data-testid="copilot-user-message"]';

let browser;
let example; // { url, child, log }

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function startExample() {
  for (const needed of ["node_modules/@copilotkit/runtime", "dist/index.html", "dist/app.js"]) {
    assert.ok(
      existsSync(path.join(EXAMPLE, needed)),
      `examples/copilotkit/${needed} is missing: run scripts/install-test-tools.sh (npm ci && npm run build there)`,
    );
  }
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const log = [];
  const child = spawn(process.execPath, [path.join(EXAMPLE, "server.mjs")], {
    cwd: EXAMPLE,
    env: { ...process.env, PORT: String(port), HOST: "127.0.0.1", AGENT_URL: `${BASE}/agent` },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout.on("data", (chunk) => log.push(chunk.toString()));
  child.stderr.on("data", (chunk) => log.push(chunk.toString()));
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) break;
    try {
      const response = await fetch(`${url}/api/copilotkit/info`);
      if (response.ok) return { url, child, log };
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  child.kill("SIGKILL");
  assert.fail(`the example's server did not start at ${url}:\n${log.join("")}`);
}

before(async () => {
  assert.ok(BASE, "AGUI_BASE must name the agui-lambda server, e.g. http://127.0.0.1:8787");
  example = await startExample();
  browser = await chromium.launch({ executablePath: CHROMIUM_PATH });
});

after(async () => {
  await browser?.close();
  if (example?.child && example.child.exitCode === null) {
    const exited = new Promise((resolve) => example.child.once("exit", resolve));
    example.child.kill("SIGTERM");
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 3_000))]);
    if (example.child.exitCode === null) example.child.kill("SIGKILL");
  }
});

// A fresh browser context (so a fresh localStorage, so a new thread) on the example.
async function openPage(t) {
  const context = await browser.newContext({ viewport: { width: 1000, height: 760 }, timezoneId: "Europe/Paris" });
  const page = await context.newPage();
  page.setDefaultTimeout(TIMEOUT);
  const problems = [];
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(`console: ${message.text()}`);
  });
  await page.goto(`${example.url}/`);
  await page.waitForSelector(TEXTAREA);
  t.after(async () => {
    if (problems.length) t.diagnostic(`browser said:\n${problems.join("\n")}`);
    await context.close();
  });
  return { page, problems };
}

async function screenshot(page, name) {
  if (!SCREENSHOT_DIR) return;
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOT_DIR, `copilotkit-${name}.png`), fullPage: true });
}

async function send(page, text) {
  await page.fill(TEXTAREA, text);
  await page.click(SEND);
}

const threadIdOf = (page) => page.locator('[data-testid="thread-id"]').innerText();
const lastAnswerText = (page) =>
  page.evaluate((selector) => [...document.querySelectorAll(selector)].at(-1)?.innerText.trim() ?? "", ASSISTANT);
const waitForAnswer = (page, text, timeout = TIMEOUT) =>
  page.waitForFunction(
    ([selector, expected]) => [...document.querySelectorAll(selector)].some((el) => el.innerText.trim() === expected),
    [ASSISTANT, text],
    { timeout },
  );
const waitIdle = (page) => page.waitForSelector(STOP, { state: "detached" });

async function thread(threadId) {
  const response = await fetch(`${BASE}/threads/${threadId}`);
  assert.equal(response.status, 200, `GET /threads/${threadId}`);
  return response.json();
}

test("a typed message's answer streams in: many DOM updates, not one", async (t) => {
  const { page, problems } = await openPage(t);
  const poem = answerTo(POEM);
  // Every length the last answer shows, as the browser's MutationObserver reports the DOM changes.
  await page.evaluate((selector) => {
    window.__lengths = [];
    window.__mutations = 0;
    new MutationObserver(() => {
      window.__mutations += 1;
      const text = [...document.querySelectorAll(selector)].at(-1)?.innerText.trim() ?? "";
      if (text.length > 0 && text.length !== window.__lengths.at(-1)) window.__lengths.push(text.length);
    }).observe(document.body, { subtree: true, childList: true, characterData: true });
  }, ASSISTANT);
  await send(page, POEM);
  await page.waitForSelector(STOP);
  await waitForAnswer(page, poem);
  await waitIdle(page);
  const { lengths, mutations } = await page.evaluate(() => ({ lengths: window.__lengths, mutations: window.__mutations }));
  t.diagnostic(`${mutations} DOM mutations; answer lengths seen: ${lengths.join(" ")}`);
  assert.ok(lengths.length >= 5, `the answer appeared in ${lengths.length} steps, expected it to stream: ${lengths}`);
  assert.ok(lengths[0] < poem.length / 2, `the first text shown was already ${lengths[0]} of ${poem.length} characters`);
  assert.equal(lengths.at(-1), poem.length);
  assert.deepEqual(await page.locator(USER).allInnerTexts(), [POEM]);
  await screenshot(page, "streamed-answer");
  assert.deepEqual(problems.filter((p) => p.startsWith("page error")), []);
});

test("the frontend tool change-background-color turns the page yellow, then the agent answers", async (t) => {
  const { page, problems } = await openPage(t);
  const before = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  assert.notEqual(before, "rgb(255, 255, 0)");
  await send(page, PAINT);
  await page.waitForFunction(() => getComputedStyle(document.body).backgroundColor === "rgb(255, 255, 0)");
  // The tool's result went back to the agent, whose next turn answers.
  await waitForAnswer(page, answerTo(PAINT, { hasToolResult: true }));
  await waitIdle(page);
  assert.equal(await page.evaluate(() => getComputedStyle(document.body).backgroundColor), "rgb(255, 255, 0)");
  assert.equal(
    await page.locator('[data-testid="tool-change-background-color"]').getAttribute("data-status"),
    "complete",
  );
  const stored = await thread(await threadIdOf(page));
  const call = stored.messages.flatMap((m) => m.toolCalls ?? []).find((c) => c.function.name === "change-background-color");
  assert.ok(call, "the thread holds the change-background-color call");
  assert.deepEqual(JSON.parse(call.function.arguments), { color: "yellow" });
  const result = stored.messages.find((m) => m.role === "tool" && m.toolCallId === call.id);
  assert.equal(result?.content, "Background color successfully changed to: yellow");
  await screenshot(page, "background-yellow");
  assert.deepEqual(problems.filter((p) => p.startsWith("page error")), []);
});

async function askForApproval(t) {
  const { page, problems } = await openPage(t);
  await send(page, CLOCK);
  const card = page.locator('[data-testid="confirm-action"]');
  await card.locator('[data-testid="approve"]').waitFor();
  assert.match(await card.innerText(), /Allow the agent to call get_current_time/);
  return { page, problems, card };
}

test("human in the loop: approving lets the gated server tool run", async (t) => {
  const { page, problems, card } = await askForApproval(t);
  await screenshot(page, "approval-asked");
  await card.locator('[data-testid="approve"]').click();
  await waitForAnswer(page, answerTo(CLOCK, { hasToolResult: true, toolResultContains: undefined }));
  await waitIdle(page);
  assert.equal(await card.locator('[data-testid="confirm-result"]').innerText(), "Approved");
  const stored = await thread(await threadIdOf(page));
  const call = stored.messages.flatMap((m) => m.toolCalls ?? []).find((c) => c.function.name === "get_current_time");
  assert.ok(call, "the thread holds the get_current_time call");
  const result = stored.messages.find((m) => m.role === "tool" && m.toolCallId === call.id);
  assert.match(result?.content ?? "", /"iso"/, "get_current_time ran and its result is stored");
  await screenshot(page, "approval-approved");
  assert.deepEqual(problems.filter((p) => p.startsWith("page error")), []);
});

test("human in the loop: denying keeps the gated server tool from running", async (t) => {
  const { page, problems, card } = await askForApproval(t);
  await card.locator('[data-testid="deny"]').click();
  await waitForAnswer(page, answerTo(CLOCK, { hasToolResult: true, toolResultContains: "denied" }));
  await waitIdle(page);
  assert.equal(await card.locator('[data-testid="confirm-result"]').innerText(), "Denied");
  const stored = await thread(await threadIdOf(page));
  const call = stored.messages.flatMap((m) => m.toolCalls ?? []).find((c) => c.function.name === "get_current_time");
  assert.ok(call, "the thread holds the get_current_time call");
  const result = stored.messages.find((m) => m.role === "tool" && m.toolCallId === call.id);
  assert.match(result?.content ?? "", /denied/, "the call was answered with the denial");
  assert.doesNotMatch(result?.content ?? "", /"iso"/, "get_current_time did not run");
  await screenshot(page, "approval-denied");
  assert.deepEqual(problems.filter((p) => p.startsWith("page error")), []);
});

test("a reload mid-run shows the completed answer (the runtime rejoins the thread's run)", async (t) => {
  const { page, problems } = await openPage(t);
  const saga = answerTo(SAGA);
  const threadId = await threadIdOf(page);
  await send(page, SAGA);
  await page.waitForFunction(([selector]) => {
    const text = [...document.querySelectorAll(selector)].at(-1)?.innerText.trim() ?? "";
    return text.length > 40;
  }, [ASSISTANT]);
  const partial = await lastAnswerText(page);
  assert.ok(partial.length < saga.length, "the answer was still streaming when the page reloaded");
  await page.reload();
  await page.waitForSelector(TEXTAREA);
  assert.equal(await threadIdOf(page), threadId, "the reloaded page is on the same thread");
  // The conversation comes back, and the run, still going, streams on to its end.
  await page.locator(USER).first().waitFor();
  await waitForAnswer(page, saga, 30_000);
  await waitIdle(page);
  assert.deepEqual(await page.locator(USER).allInnerTexts(), [SAGA]);
  const stored = await thread(threadId);
  assert.equal(stored.activeRunId ?? null, null);
  assert.equal(stored.messages.at(-1).content, saga, "the agent stored the same, complete answer");
  await screenshot(page, "reloaded-mid-run");
  assert.deepEqual(problems.filter((p) => p.startsWith("page error")), []);
});

test("Stop ends the run: no more text arrives, and the agent's run is cancelled", async (t) => {
  const { page, problems } = await openPage(t);
  const saga = answerTo(SAGA);
  const threadId = await threadIdOf(page);
  await send(page, SAGA);
  await page.waitForFunction(([selector]) => {
    const text = [...document.querySelectorAll(selector)].at(-1)?.innerText.trim() ?? "";
    return text.length > 40;
  }, [ASSISTANT]);
  await page.click(STOP);
  await waitIdle(page);
  const atStop = await lastAnswerText(page);
  assert.ok(atStop.length < saga.length, "the answer was cut short");
  // The saga would need a few more seconds; nothing more may arrive.
  await page.waitForTimeout(2_000);
  assert.equal(await lastAnswerText(page), atStop, "no text arrived after Stop");
  // The Stop reached the agent: its run ended (cancelled) and it kept the partial answer.
  let stored = await thread(threadId);
  for (let i = 0; i < 20 && stored.activeRunId; i++) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    stored = await thread(threadId);
  }
  assert.equal(stored.activeRunId ?? null, null, "the agent's run ended");
  const answer = stored.messages.at(-1);
  assert.equal(answer.role, "assistant");
  assert.ok(answer.content.length < saga.length, "the agent stopped before the end of the answer");
  assert.ok(saga.startsWith(answer.content), "the agent kept the answer as streamed so far");
  await screenshot(page, "stopped");
  assert.deepEqual(problems.filter((p) => p.startsWith("page error")), []);
});
