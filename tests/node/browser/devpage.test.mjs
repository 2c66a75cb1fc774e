// The built-in dev page (GET /) in a real browser: Debian's chromium driven by Playwright,
// against a local server whose model is aimock (the "[devpage] …" fixtures of
// tests/fixtures/aimock-openai.json) and whose get_current_time needs approval.
//
// Environment:
//   AGUI_BASE      (required) the server, e.g. http://127.0.0.1:8787 (APPROVAL_REQUIRED_TOOLS=get_current_time)
//   CHROMIUM_PATH  (optional) the browser, default /usr/bin/chromium
//   SCREENSHOT_DIR (optional) one screenshot per scenario lands there (CI keeps them)
//
// Run: cd tests/node && AGUI_BASE=… node --test --test-concurrency=1 browser/

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { chromium } from "playwright";
import { renderMarkdown } from "../../../src/api/dev_page/markdown.js";

const BASE = process.env.AGUI_BASE;
const CHROMIUM_PATH = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const SCREENSHOT_DIR = process.env.SCREENSHOT_DIR || "";
const TIMEOUT = 20_000;
const STORY_END = "THE END.";

let browser;

before(async () => {
  assert.ok(BASE, "AGUI_BASE must name the server, e.g. http://127.0.0.1:8787");
  browser = await chromium.launch({ executablePath: CHROMIUM_PATH });
});

after(async () => {
  await browser?.close();
});

// A fresh browser context (so a new thread) on the page; collects what the page complains about.
async function openPage(base = BASE) {
  const context = await browser.newContext({ viewport: { width: 1000, height: 720 }, timezoneId: "Europe/Paris" });
  const page = await context.newPage();
  page.setDefaultTimeout(TIMEOUT);
  const problems = [];
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(`console: ${message.text()}`);
  });
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  await page.goto(`${base}/`);
  await page.waitForSelector('#status[data-state="idle"]');
  return { page, problems, close: () => context.close() };
}

async function screenshot(page, name) {
  if (!SCREENSHOT_DIR) return;
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOT_DIR, `devpage-${name}.png`), fullPage: true });
}

async function send(page, text) {
  await page.fill("#input", text);
  await page.click("#send");
}

const waitStatus = (page, state) => page.waitForSelector(`#status[data-state="${state}"]`);
const lastAnswer = (page) => page.locator(".msg-assistant > .body").last();
const answerLength = (page) =>
  page.evaluate(() => [...document.querySelectorAll(".msg-assistant > .body")].at(-1)?.textContent.length ?? 0);

test("markdown: HTML is escaped before anything is read, links are http(s) only", () => {
  const html = renderMarkdown("**<b>x</b>** `<i>` [a](javascript:alert(1)) [b](https://x.test/a_b_c) <img src=x onerror=y>");
  assert.equal(
    html,
    '<p><strong>&lt;b&gt;x&lt;/b&gt;</strong> <code>&lt;i&gt;</code> [a](javascript:alert(1)) ' +
      '<a href="https://x.test/a_b_c" target="_blank" rel="noopener noreferrer">b</a> &lt;img src=x onerror=y&gt;</p>',
  );
  assert.equal(renderMarkdown("```\n<script>\n```"), "<pre><code>&lt;script&gt;</code></pre>");
  assert.equal(renderMarkdown("# T\n- a\n- b"), "<h1>T</h1><ul><li>a</li><li>b</li></ul>");
});

test("the answer streams in as Markdown, with the model's reasoning shown", async () => {
  const { page, problems, close } = await openPage();
  // Every DOM change of the answer, as the browser reports it.
  await page.evaluate(() => {
    window.answerLengths = [];
    new MutationObserver(() => {
      const body = [...document.querySelectorAll(".msg-assistant > .body")].at(-1);
      if (body) window.answerLengths.push(body.textContent.length);
    }).observe(document.getElementById("log"), { childList: true, subtree: true, characterData: true });
  });
  await send(page, "[devpage] markdown please");
  await waitStatus(page, "done");
  const lengths = await page.evaluate(() => window.answerLengths);
  const growing = new Set(lengths.filter((n) => n > 0));
  assert.ok(growing.size >= 5, `the answer arrived in ${growing.size} DOM updates, not several: ${lengths}`);
  const answer = lastAnswer(page);
  assert.equal(await answer.locator("h2").textContent(), "Dev page check");
  assert.equal(await answer.locator("strong").first().textContent(), "bold");
  assert.equal(await answer.locator("em").first().textContent(), "calm");
  assert.equal(await answer.locator("p code").first().textContent(), "inline code");
  assert.equal(await answer.locator("li").count(), 2);
  assert.equal(await answer.locator("a").getAttribute("href"), "https://docs.ag-ui.com");
  assert.match(await answer.locator("pre code").textContent(), /println!\("<not html>"\)/);
  // The model's markup is text, never elements.
  assert.equal(await page.locator("#log script").count(), 0);
  assert.match(await answer.textContent(), /<script>alert\('no'\)<\/script> stays text/);
  assert.match(await page.locator(".msg-reasoning").first().textContent(), /a heading, a list and code/);
  await screenshot(page, "markdown");
  assert.deepEqual(problems, []);
  await close();
});

// What a newcomer gets from `cargo run` with nothing configured: the demo model behind the page.
const DEMO_BASE = process.env.AGUI_DEMO_BASE;

test("a new thread suggests what to try, and the demo model turns the page green as suggested", { skip: !DEMO_BASE && "AGUI_DEMO_BASE not set" }, async () => {
  const { page, problems, close } = await openPage(DEMO_BASE);
  const hints = page.locator("#hints");
  assert.ok(await hints.isVisible(), "the empty state shows its suggestions");
  await page.waitForSelector("#hints[data-ready]");
  assert.deepEqual(await page.locator("#hints .hint").allTextContents(), [
    "What time is it?",
    "Change background color to green",
    "Please confirm action: delete the draft",
    "Ask the researcher: what is AG-UI?",
    "Show me a form",
  ]);
  await screenshot(page, "empty");
  await page.locator("#hints .hint", { hasText: "Change background color to green" }).click();
  await page.locator(".tool-result-text").first().waitFor();
  await waitStatus(page, "done");
  assert.ok(!(await hints.isVisible()), "the suggestions go once the thread has messages");
  const call = page.locator(".tool-call").first();
  assert.equal(await call.locator(".tool-name").textContent(), "change-background-color");
  assert.deepEqual(JSON.parse(await call.locator(".tool-args").textContent()), { color: "green" });
  assert.equal(await page.evaluate(() => getComputedStyle(document.body).backgroundColor), "rgb(0, 128, 0)");
  assert.match(await lastAnswer(page).textContent(), /scripted demo model .*The tool answered: Background color successfully changed to: green/);
  await screenshot(page, "demo-background");
  assert.deepEqual(problems, []);
  await close();
});

test("the demo team delegates as suggested: the researcher's answer shows under its call", { skip: !DEMO_BASE && "AGUI_DEMO_BASE not set" }, async () => {
  const { page, problems, close } = await openPage(DEMO_BASE);
  await page.waitForSelector("#hints[data-ready]");
  await page.locator("#hints .hint", { hasText: "Ask the researcher: what is AG-UI?" }).click();
  const box = page.locator('.tool-call .subagent[data-state="done"]');
  await box.waitFor();
  await waitStatus(page, "done");
  assert.equal(await page.locator(".tool-call .tool-name").first().textContent(), "researcher");
  assert.deepEqual(JSON.parse(await page.locator(".tool-call .tool-args").first().textContent()), { task: "what is AG-UI?" });
  assert.match(await box.locator(".subagent-head").textContent(), /^researcher \(sub-agent\)$/);
  assert.match(await box.locator(".msg-assistant .body").last().textContent(), /scripted demo model .*You said: what is AG-UI\?/);
  assert.match(await lastAnswer(page).textContent(), /The tool answered: This is agui-lambda's scripted demo model/);
  await screenshot(page, "demo-team");
  assert.deepEqual(problems, []);
  await close();
});

test("the frontend tool change-background-color turns the page green, then the answer follows", async () => {
  const { page, problems, close } = await openPage();
  await send(page, "[devpage] paint the background green");
  await page.locator(".msg-assistant > .body strong", { hasText: "green" }).waitFor();
  await waitStatus(page, "done");
  const background = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  assert.equal(background, "rgb(0, 128, 0)");
  const call = page.locator(".tool-call").first();
  assert.equal(await call.locator(".tool-name").textContent(), "change-background-color");
  assert.deepEqual(JSON.parse(await call.locator(".tool-args").textContent()), { color: "green" });
  assert.equal(await call.locator(".tool-result-text").textContent(), "Background color successfully changed to: green");
  assert.match(await lastAnswer(page).textContent(), /The background is now green\./);
  await screenshot(page, "background");
  assert.deepEqual(problems, []);
  await close();
});

for (const answer of ["approve", "deny"]) {
  test(`human in the loop: ${answer} the interrupt of get_current_time`, async () => {
    const { page, problems, close } = await openPage();
    await send(page, "[devpage] ask the clock");
    await waitStatus(page, "waiting");
    const card = page.locator(".approval");
    assert.match(await card.textContent(), /get_current_time/);
    assert.equal(await page.locator(".tool-result-text").count(), 0, "the tool has not run");
    await screenshot(page, `hitl-${answer}-asked`);
    await card.locator(`button.${answer}`).click();
    await page.locator(".msg-assistant > .body", { hasText: "The clock tool has answered." }).waitFor();
    await waitStatus(page, "done");
    assert.equal(await page.locator(".approval").count(), 0);
    const result = await page.locator(".tool-call .tool-result-text").first().textContent();
    if (answer === "approve") {
      assert.match(result, /Europe\/Paris/);
    } else {
      assert.match(result, /denied/);
      assert.doesNotMatch(result, /Europe\/Paris/);
    }
    await screenshot(page, `hitl-${answer}`);
    assert.deepEqual(problems, []);
    await close();
  });
}

for (const answer of ["approve", "deny"]) {
  test(`human in the loop, the AG-UI HTTP Agent document scenario 4: ${answer} the confirmAction frontend tool`, async () => {
    const { page, problems, close } = await openPage();
    await send(page, "[devpage] clear out the temp files");
    await waitStatus(page, "waiting");
    const card = page.locator(".approval");
    assert.match(await card.locator(".question").textContent(), /Confirm: delete the temporary files \(15\)\?/);
    await card.locator(`button.${answer}`).click();
    const expected = answer === "approve" ? "Deleted 15 temporary files." : "Nothing was deleted.";
    await page.locator(".msg-assistant > .body", { hasText: expected }).waitFor();
    await waitStatus(page, "done");
    const result = await page.locator(".tool-call .tool-result-text").first().textContent();
    assert.equal(result, answer === "approve" ? "confirmed" : "denied");
    await screenshot(page, `confirm-${answer}`);
    assert.deepEqual(problems, []);
    await close();
  });
}

test("a reload in the middle of a run restores the thread and shows the completed answer", async () => {
  const { page, problems, close } = await openPage();
  await send(page, "[devpage] a long story");
  await page.waitForFunction(() => ([...document.querySelectorAll(".msg-assistant > .body")].at(-1)?.textContent.length ?? 0) > 30);
  const threadUrl = page.url();
  assert.match(threadUrl, /#thread=/);
  await page.reload();
  assert.equal(page.url(), threadUrl, "the thread stays in the URL");
  await waitStatus(page, "running"); // rejoined the run in progress
  await page.locator(".msg-assistant > .body", { hasText: STORY_END }).waitFor();
  await waitStatus(page, "done");
  assert.equal(await page.locator(".msg-user").first().textContent(), "[devpage] a long story");
  assert.equal(await page.locator(".msg-assistant > .body", { hasText: STORY_END }).count(), 1, "one answer, not two");
  await screenshot(page, "reload");
  assert.deepEqual(problems, []);
  await close();
});

test("Stop cancels the run: the page says so and no more text arrives", async () => {
  const { page, problems, close } = await openPage();
  await send(page, "[devpage] a long story");
  await page.waitForFunction(() => ([...document.querySelectorAll(".msg-assistant > .body")].at(-1)?.textContent.length ?? 0) > 30);
  await page.click("#stop");
  await waitStatus(page, "cancelled");
  assert.ok(await page.locator(".notice", { hasText: "run cancelled" }).isVisible());
  const stoppedAt = await answerLength(page);
  await page.waitForTimeout(1_500);
  assert.equal(await answerLength(page), stoppedAt, "text arrived after the run was cancelled");
  assert.doesNotMatch(await lastAnswer(page).textContent(), /THE END\./);
  assert.ok(await page.locator("#stop").isHidden());
  await screenshot(page, "stop");
  assert.deepEqual(problems, []);
  await close();
});

test("the page sends only new messages: each request carries the last held message and the new one", async () => {
  const { page, problems, close } = await openPage();
  const requests = [];
  page.on("request", (request) => {
    if (request.method() === "POST" && new URL(request.url()).pathname.endsWith("/agent")) {
      const body = request.postData() ?? "";
      requests.push({ bytes: Buffer.byteLength(body), messages: JSON.parse(body).messages });
    }
  });
  const paragraph = (turn) =>
    `[long-thread] turn ${turn}. ${"Here is what happened today, and what I would like you to keep in mind. ".repeat(21)}`.slice(0, 1500);
  const turns = 6;
  for (let turn = 0; turn < turns; turn++) {
    await send(page, paragraph(turn));
    await waitStatus(page, "done");
  }
  assert.equal(await page.locator(".msg-assistant").count(), turns);
  // After a reload the page restores the thread from the server and goes on the same way.
  await page.reload();
  await page.waitForSelector('#status[data-state="idle"]');
  assert.equal(await page.locator(".msg-assistant").count(), turns);
  await send(page, paragraph(turns));
  await waitStatus(page, "done");
  assert.equal(await page.locator(".msg-assistant").count(), turns + 1);

  assert.equal(requests.length, turns + 1);
  assert.deepEqual(requests[0].messages.map((m) => m.role), ["user"]);
  for (const [index, request] of requests.entries()) {
    assert.ok(request.bytes < 8 * 1024, `request ${index} carried ${request.bytes} bytes`);
    if (index > 0) {
      assert.deepEqual(request.messages.map((m) => m.role), ["assistant", "user"], `request ${index}`);
    }
  }
  // What the page shows is what the server holds.
  const threadId = await page.locator("#thread-id").textContent();
  const stored = await (await fetch(`${BASE}/threads/${threadId}?limit=500`)).json();
  assert.equal(stored.messages.length, 2 * (turns + 1));
  assert.deepEqual(requests.at(-1).messages[0].id, stored.messages.at(-3).id);
  await screenshot(page, "only-new-messages");
  assert.deepEqual(problems, []);
  await close();
});
