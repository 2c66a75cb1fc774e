// The CopilotKit example (examples/copilotkit) in a real browser: Debian's chromium driven by
// Playwright. The page is served from its own origin (the example's serve.mjs, static files
// only) and its CopilotKit runtime is the agui-lambda server at AGUI_BASE itself (/copilotkit):
// no Node runtime in between. The server's model is aimock (the "[copilotkit] …" fixtures of
// tests/fixtures/aimock-openai.json, and "[a2ui] form" of tests/fixtures/aimock-a2ui.json), its
// get_current_time needs approval, its A2UI is left `auto`, and it answers CORS for the page's
// origin.
//
// Environment:
//   AGUI_BASE      (required) the agui-lambda server, e.g. http://127.0.0.1:8787, started with
//                  APPROVAL_REQUIRED_TOOLS=get_current_time and CORS_ALLOWED_ORIGINS=*
//   CHROMIUM_PATH  (optional) the browser, default /usr/bin/chromium
//   SCREENSHOT_DIR (optional) one screenshot per scenario lands there (CI keeps them)
// The example must be installed and built first (scripts/install-test-tools.sh does it:
// `npm ci && npm run build` in examples/copilotkit); this test builds nothing.
//
// Run: cd tests/node && AGUI_BASE=… node --test --test-concurrency=1 browser/

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { collectProblems, launchChromium, screenshotter, serveCopilotKit } from "./pages.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const BASE = process.env.AGUI_BASE;
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
const THREAD_ITEM = '[data-testid="thread-item"]';

let browser;
let page_server; // { url, child }

before(async () => {
  assert.ok(BASE, "AGUI_BASE must name the agui-lambda server, e.g. http://127.0.0.1:8787");
  page_server = await serveCopilotKit();
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  page_server?.child.kill("SIGTERM");
});

// A fresh browser context (so a fresh localStorage, so a new thread) on the page, its runtime
// the function's /copilotkit.
async function openPage(t) {
  const context = await browser.newContext({ viewport: { width: 1100, height: 760 }, timezoneId: "Europe/Paris" });
  const page = await context.newPage();
  page.setDefaultTimeout(TIMEOUT);
  const problems = collectProblems(page, "page error");
  await page.goto(`${page_server.url}/?runtime=${encodeURIComponent(`${BASE}/copilotkit`)}`);
  await page.waitForSelector(TEXTAREA);
  t.after(async () => {
    if (problems.length) t.diagnostic(`browser said:\n${problems.join("\n")}`);
    await context.close();
  });
  return { page, problems };
}

const screenshot = screenshotter("copilotkit-");

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
const noErrors = (problems) => assert.deepEqual(problems, [], "no page error, nothing reported by CopilotKit");

async function thread(threadId) {
  const response = await fetch(`${BASE}/threads/${threadId}`);
  assert.equal(response.status, 200, `GET /threads/${threadId}`);
  return response.json();
}

test("a typed message's answer streams in from the function itself", async (t) => {
  const { page, problems } = await openPage(t);
  const poem = answerTo(POEM);
  await page.evaluate((selector) => {
    window.__lengths = [];
    new MutationObserver(() => {
      const text = [...document.querySelectorAll(selector)].at(-1)?.innerText.trim() ?? "";
      if (text.length > 0 && text.length !== window.__lengths.at(-1)) window.__lengths.push(text.length);
    }).observe(document.body, { subtree: true, childList: true, characterData: true });
  }, ASSISTANT);
  await send(page, POEM);
  await waitForAnswer(page, poem);
  await waitIdle(page);
  const lengths = await page.evaluate(() => window.__lengths);
  assert.ok(lengths.length >= 5, `the answer appeared in ${lengths.length} steps, expected it to stream: ${lengths}`);
  assert.deepEqual(await page.locator(USER).allInnerTexts(), [POEM]);
  await screenshot(page, "streamed-answer");
  noErrors(problems);
});

test("the frontend tool change-background-color turns the page yellow, then the agent answers", async (t) => {
  const { page, problems } = await openPage(t);
  await send(page, PAINT);
  await page.waitForFunction(() => getComputedStyle(document.body).backgroundColor === "rgb(255, 255, 0)");
  await waitForAnswer(page, answerTo(PAINT, { hasToolResult: true }));
  await waitIdle(page);
  const stored = await thread(await threadIdOf(page));
  const call = stored.messages.flatMap((m) => m.toolCalls ?? []).find((c) => c.function.name === "change-background-color");
  assert.deepEqual(JSON.parse(call.function.arguments), { color: "yellow" });
  const result = stored.messages.find((m) => m.role === "tool" && m.toolCallId === call.id);
  assert.equal(result?.content, "Background color successfully changed to: yellow");
  await screenshot(page, "background-yellow");
  noErrors(problems);
});

test("human in the loop: approving lets the gated server tool run, denying keeps it from running", async (t) => {
  for (const [button, expected, shown] of [
    ["approve", answerTo(CLOCK, { hasToolResult: true, toolResultContains: undefined }), "Approved"],
    ["deny", answerTo(CLOCK, { hasToolResult: true, toolResultContains: "denied" }), "Denied"],
  ]) {
    const { page, problems } = await openPage(t);
    await send(page, CLOCK);
    const card = page.locator('[data-testid="confirm-action"]');
    await card.locator(`[data-testid="${button}"]`).click();
    await waitForAnswer(page, expected);
    await waitIdle(page);
    assert.equal(await card.locator('[data-testid="confirm-result"]').innerText(), shown);
    const stored = await thread(await threadIdOf(page));
    const call = stored.messages.flatMap((m) => m.toolCalls ?? []).find((c) => c.function.name === "get_current_time");
    const result = stored.messages.find((m) => m.role === "tool" && m.toolCallId === call.id);
    if (button === "approve") assert.match(result.content, /"iso"/, "get_current_time ran");
    else assert.match(result.content, /denied/, "the call was answered with the denial");
    await screenshot(page, `approval-${button}`);
    noErrors(problems);
  }
});

test("a reload restores the thread; mid-run, it rejoins the run and streams on to its end", async (t) => {
  const { page, problems } = await openPage(t);
  const saga = answerTo(SAGA);
  const threadId = await threadIdOf(page);
  await send(page, SAGA);
  await page.waitForFunction(([selector]) => {
    const text = [...document.querySelectorAll(selector)].at(-1)?.innerText.trim() ?? "";
    return text.length > 40;
  }, [ASSISTANT]);
  assert.ok((await lastAnswerText(page)).length < saga.length, "the answer was still streaming when the page reloaded");
  await page.reload();
  await page.waitForSelector(TEXTAREA);
  assert.equal(await threadIdOf(page), threadId, "the reloaded page is on the same thread");
  await page.locator(USER).first().waitFor();
  await waitForAnswer(page, saga, 30_000);
  await waitIdle(page);
  assert.deepEqual(await page.locator(USER).allInnerTexts(), [SAGA]);
  // Once more at rest: the whole conversation comes back from the function's store.
  await page.reload();
  await waitForAnswer(page, saga);
  assert.deepEqual(await page.locator(USER).allInnerTexts(), [SAGA]);
  assert.equal((await thread(threadId)).messages.at(-1).content, saga);
  await screenshot(page, "reloaded");
  noErrors(problems);
});

test("the thread list shows the threads, switches between them, renames and archives", async (t) => {
  const { page, problems } = await openPage(t);
  await send(page, POEM);
  await waitForAnswer(page, answerTo(POEM));
  await waitIdle(page);
  const first = await threadIdOf(page);
  const item = (id) => page.locator(`${THREAD_ITEM}[data-thread-id="${id}"]`);
  // The list refreshes when a run ends: the new thread appears under its title.
  await item(first).waitFor();
  assert.equal(await item(first).locator('[data-testid="thread-open"]').innerText(), POEM);

  await page.click('[data-testid="new-thread"]');
  await page.waitForFunction(([selector]) => document.querySelectorAll(selector).length === 0, [ASSISTANT]);
  await send(page, PAINT);
  await waitForAnswer(page, answerTo(PAINT, { hasToolResult: true }));
  await waitIdle(page);
  const second = await threadIdOf(page);
  assert.notEqual(second, first);
  await item(second).waitFor();

  // Back to the first thread: its conversation, restored by the function.
  await item(first).locator('[data-testid="thread-open"]').click();
  await waitForAnswer(page, answerTo(POEM));
  assert.equal(await threadIdOf(page), first);
  assert.deepEqual(await page.locator(USER).allInnerTexts(), [POEM]);

  await item(second).locator('[data-testid="thread-rename"]').click();
  await page.fill('[data-testid="rename-input"]', "The yellow page");
  await page.press('[data-testid="rename-input"]', "Enter");
  await page.waitForFunction(async ([base, id]) => (await (await fetch(`${base}/threads/${id}`)).json()).title === "The yellow page", [BASE, second]);
  await item(second).locator('[data-testid="thread-archive"]').click();
  await item(second).waitFor({ state: "detached" });
  await page.check('[data-testid="show-archived"]');
  await page.locator(`${THREAD_ITEM}[data-thread-id="${second}"][data-archived="true"]`).waitFor();
  await screenshot(page, "thread-list");
  noErrors(problems);
});

test("Stop ends the run: no more text arrives, the partial answer is kept and the thread is free", async (t) => {
  const { page, problems } = await openPage(t);
  const saga = answerTo(SAGA);
  const threadId = await threadIdOf(page);
  await send(page, SAGA);
  await page.waitForFunction(([selector]) => {
    const text = [...document.querySelectorAll(selector)].at(-1)?.innerText.trim() ?? "";
    return text.length > 40;
  }, [ASSISTANT]);
  await page.click(STOP);
  await page.waitForSelector(STOP, { state: "detached", timeout: 5_000 });
  const atStop = await lastAnswerText(page);
  assert.ok(atStop.length < saga.length, "the answer was cut short");
  await page.waitForTimeout(2_000);
  assert.equal(await lastAnswerText(page), atStop, "no text arrived after Stop");
  const stored = await thread(threadId);
  assert.equal(stored.activeRunId ?? null, null, "the function's run ended");
  assert.equal(stored.messages.at(-1).content, atStop, "the function kept the partial answer");
  // The next message is answered at once.
  await send(page, POEM);
  await waitForAnswer(page, answerTo(POEM));
  await screenshot(page, "stopped");
  noErrors(problems);
});

// A2UI (the server's A2UI is `auto`, so /info says A2UI is on and the page declares it paints):
// the model builds a form (tests/fixtures/aimock-a2ui.json's "[a2ui] form"), CopilotKit's own A2UI
// renderer paints it in the chat, the user types into its field and presses its button, and the
// agent's answer names what was typed (the click arrives as a new run, said as the user's).
const A2UI_FIXTURES = JSON.parse(readFileSync(path.join(ROOT, "tests/fixtures/aimock-a2ui.json"), "utf8")).fixtures;
const a2uiAnswer = (match) =>
  A2UI_FIXTURES.find((f) => Object.entries(match).every(([key, value]) => f.match[key] === value)).response.content;

test("A2UI: the model's form is painted, typed into and sent, and the answer names what was typed", async (t) => {
  const { page, problems } = await openPage(t);
  await send(page, "[a2ui] form please");
  const field = page.getByLabel("Your name");
  await field.waitFor();
  await page.getByText(a2uiAnswer({ toolCallId: "call_a2ui_form" }), { exact: true }).waitFor();
  await waitIdle(page);
  await screenshot(page, "a2ui-form");
  await field.fill("Grace Hopper");
  await page.getByRole("button", { name: "Send", exact: true }).click();
  await waitForAnswer(page, a2uiAnswer({ userMessage: '"name":"Grace Hopper"' }));
  await waitIdle(page);
  await screenshot(page, "a2ui-answered");
  const stored = await thread(await threadIdOf(page));
  const said = stored.messages
    .filter((m) => m.role === "user")
    .map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)));
  assert.ok(said.some((text) => text.includes('"name":"Grace Hopper"')), said.join("\n"));
  noErrors(problems);
});
