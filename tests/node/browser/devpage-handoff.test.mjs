// The dev page follows a run whose streams end before it does: a local server with
// STREAM_MAX_SECS=1 and the demo model (which repeats the prompt at about 30 ms a word), so every
// stream of a long answer ends after a second with the notice that the run goes on. The page
// must show one answer, whole, as if nothing happened. (Under Lambda the same notice ends an
// invocation's streams when the run goes on in the next one.)
//
// Environment:
//   AGUI_STREAM_LIMITED_BASE (required, else skipped) that server
//   CHROMIUM_PATH            (optional) the browser, default /usr/bin/chromium
//   SCREENSHOT_DIR           (optional) where the screenshot lands

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { chromium } from "playwright";

const BASE = process.env.AGUI_STREAM_LIMITED_BASE;
const CHROMIUM_PATH = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const SCREENSHOT_DIR = process.env.SCREENSHOT_DIR || "";
const skip = BASE ? false : "AGUI_STREAM_LIMITED_BASE not set";

let browser;

before(async () => {
  if (BASE) browser = await chromium.launch({ executablePath: CHROMIUM_PATH });
});

after(async () => {
  await browser?.close();
});

test("an answer longer than its streams shows whole, followed across each stream's end", { skip }, async () => {
  const context = await browser.newContext({ viewport: { width: 1000, height: 720 } });
  const page = await context.newPage();
  page.setDefaultTimeout(30_000);
  const problems = [];
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(`console: ${message.text()}`);
  });
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  const follows = [];
  page.on("request", (request) => {
    if (request.url().includes("/runs/") && request.url().endsWith("/events")) {
      follows.push(request.headers()["last-event-id"]);
    }
  });
  await page.goto(`${BASE}/`);
  await page.waitForSelector('#status[data-state="idle"]');
  const words = Array.from({ length: 90 }, (_, n) => `w${n}`).join(" ");
  await page.fill("#input", words);
  await page.click("#send");
  await page.waitForSelector('#status[data-state="done"]');
  const answer = await page.locator(".msg-assistant > .body").last().textContent();
  assert.match(answer, new RegExp(`You said: ${words}$`), answer);
  assert.ok(follows.length >= 1, "the page followed the run after its first stream ended");
  assert.ok(follows.every((id) => Number(id) > 0), `each follow resumes after an event: ${follows}`);
  assert.equal(await page.locator(".notice.error").count(), 0);
  assert.deepEqual(problems, []);
  // What the page shows is the thread as stored: one user message, one answer.
  const threadId = await page.evaluate(() => localStorage.getItem("agui-dev:thread") ?? "");
  if (threadId) {
    const thread = await (await fetch(`${BASE}/threads/${threadId}`)).json();
    assert.deepEqual(
      thread.messages.map((message) => message.role),
      ["user", "assistant"],
    );
  }
  if (SCREENSHOT_DIR) {
    mkdirSync(SCREENSHOT_DIR, { recursive: true });
    await page.screenshot({ path: path.join(SCREENSHOT_DIR, "devpage-handoff.png"), fullPage: true });
  }
  await context.close();
});
