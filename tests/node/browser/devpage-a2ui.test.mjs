// The dev page paints an A2UI surface the demo model builds (plain `cargo run`, nothing
// configured): the "Show me a form" suggestion, the form painted, a value typed and sent back by
// the form's button, the demo's answer naming it, and the surface painted again after a reload.
//
// Environment:
//   AGUI_DEMO_BASE (required, else skipped) a server started as `cargo run` is: the demo model
//   CHROMIUM_PATH  (optional) the browser, default /usr/bin/chromium
//   SCREENSHOT_DIR (optional) screenshots land there (CI keeps them)
//
// Run: cd tests/node && AGUI_DEMO_BASE=… node --test browser/devpage-a2ui.test.mjs

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { chromium } from "playwright";

const DEMO_BASE = process.env.AGUI_DEMO_BASE;
const CHROMIUM_PATH = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const SCREENSHOT_DIR = process.env.SCREENSHOT_DIR || "";
const TIMEOUT = 20_000;

let browser;

before(async () => {
  if (DEMO_BASE) browser = await chromium.launch({ executablePath: CHROMIUM_PATH });
});

after(async () => {
  await browser?.close();
});

async function screenshot(page, name) {
  if (!SCREENSHOT_DIR) return;
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOT_DIR, `devpage-a2ui-${name}.png`), fullPage: true });
}

const waitStatus = (page, state) => page.waitForSelector(`#status[data-state="${state}"]`);
const lastAnswer = (page) => page.locator(".msg-assistant > .body").last();
const SURFACE = '.msg-activity[data-status="painted"] .a2ui-surface[data-surface-id="demo-form"]';

test("the demo model's form is painted, answers what was typed, and comes back after a reload", { skip: !DEMO_BASE && "AGUI_DEMO_BASE not set" }, async () => {
  const context = await browser.newContext({ viewport: { width: 1000, height: 720 } });
  const page = await context.newPage();
  page.setDefaultTimeout(TIMEOUT);
  const problems = [];
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(`console: ${message.text()}`);
  });
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  await page.goto(`${DEMO_BASE}/`);
  await waitStatus(page, "idle");
  await page.waitForSelector("#hints[data-ready]");

  await page.locator("#hints .hint", { hasText: "Show me a form" }).click();
  const surface = page.locator(SURFACE);
  await surface.waitFor();
  await waitStatus(page, "done");
  assert.equal(await page.locator(".tool-call .tool-name").first().textContent(), "render_a2ui");
  assert.equal(await surface.locator('[data-a2ui-component="Text"]').first().textContent(), "A form from the demo model");
  assert.match(await surface.locator('[data-a2ui-id="name"]').textContent(), /Your name/);

  await surface.locator('[data-a2ui-id="name"] input').fill("Ada Lovelace");
  await surface.locator('[data-a2ui-id="send"]').click();
  await page.locator(".msg-assistant > .body", { hasText: "with name: Ada Lovelace." }).waitFor();
  await waitStatus(page, "done");
  assert.match(
    await lastAnswer(page).textContent(),
    /scripted demo model .*You pressed "submit" on the surface "demo-form" with name: Ada Lovelace\./,
  );
  // The click is in the thread as the user's message.
  assert.match(await page.locator(".msg-user").last().textContent(), /User performed action "submit" on surface "demo-form"/);
  await screenshot(page, "answered");

  // A reload restores the thread from the server: the surface is painted again, once.
  await page.reload();
  await page.locator(SURFACE).waitFor();
  assert.equal(await page.locator(".a2ui-surface[data-surface-id=\"demo-form\"]").count(), 1);
  assert.equal(await page.locator(`${SURFACE} [data-a2ui-id="name"] input`).count(), 1);
  assert.equal(await page.locator(`${SURFACE} [data-a2ui-id="send"]`).count(), 1);
  assert.match(await lastAnswer(page).textContent(), /with name: Ada Lovelace\./);
  await screenshot(page, "reloaded");
  assert.deepEqual(problems, []);
  await context.close();
});
