// The dev page's Memories panel in a real browser (Debian's chromium driven by Playwright),
// against a local server with MEMORY=on (AGUI_MEMORY_BASE; scripts/test.sh starts one on the
// demo model). Skipped without AGUI_MEMORY_BASE.
//
// Run: cd tests/node && AGUI_MEMORY_BASE=http://127.0.0.1:8788 node --test browser/devpage-memory.test.mjs

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { chromium } from "playwright";

const BASE = process.env.AGUI_MEMORY_BASE;
const CHROMIUM_PATH = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const SCREENSHOT_DIR = process.env.SCREENSHOT_DIR || "";

async function save(text) {
  const response = await fetch(`${BASE}/memories`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ text }),
  });
  const body = await response.text();
  assert.equal(response.status, 201, body);
  return JSON.parse(body).id;
}

async function kept() {
  const response = await fetch(`${BASE}/memories`);
  assert.equal(response.status, 200);
  return (await response.json()).memories.map((memory) => memory.text);
}

test("the Memories panel lists what is kept, deletes one, then forgets everything", { skip: !BASE }, async () => {
  await fetch(`${BASE}/memories`, { method: "DELETE" });
  await save("Sam lives in Lyon");
  await save("Sam is vegetarian");
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH });
  try {
    const page = await browser.newPage();
    const problems = [];
    page.on("pageerror", (error) => problems.push(error.message));
    await page.goto(`${BASE}/`);
    await page.click("#memories > summary");
    const items = page.locator("#memory-list .memory-text");
    await items.nth(1).waitFor();
    assert.deepEqual(await items.allTextContents(), ["Sam is vegetarian", "Sam lives in Lyon"]);
    if (SCREENSHOT_DIR) {
      mkdirSync(SCREENSHOT_DIR, { recursive: true });
      await page.screenshot({ path: path.join(SCREENSHOT_DIR, "devpage-memories.png"), fullPage: true });
    }
    await page.locator(".memory", { hasText: "Lyon" }).locator(".memory-delete").click();
    await page.locator(".memory", { hasText: "Lyon" }).waitFor({ state: "detached" });
    assert.deepEqual(await kept(), ["Sam is vegetarian"]);
    await page.click("#forget-all");
    await page.locator("#memory-list", { hasText: "nothing kept" }).waitFor();
    assert.deepEqual(await kept(), []);
    assert.deepEqual(problems, []);
  } finally {
    await browser.close();
  }
});

// The same panel on a server with memory off (the demo-model server `cargo run` starts,
// AGUI_DEMO_BASE): it says memory is off and how to turn it on, and offers nothing to forget.
const OFF_BASE = process.env.AGUI_DEMO_BASE;

test("with memory off the Memories panel says how to turn it on, with no button that cannot work", { skip: !OFF_BASE }, async () => {
  const refused = await fetch(`${OFF_BASE}/memories`);
  assert.equal(refused.status, 404);
  assert.match((await refused.json()).error.message, /start it with MEMORY=on/);
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH });
  try {
    const page = await browser.newPage();
    const problems = [];
    page.on("pageerror", (error) => problems.push(error.message));
    await page.goto(`${OFF_BASE}/`);
    await page.click("#memories > summary");
    const line = page.locator("#memory-list li");
    await line.filter({ hasText: "Memory is off" }).waitFor();
    assert.equal(
      await line.textContent(),
      'Memory is off on this server: nothing is kept about you. Start it with MEMORY=on (or give a profile "memory": true) to keep facts across threads.',
    );
    assert.equal(await page.locator("#forget-all").isVisible(), false, "no Forget everything button");
    if (SCREENSHOT_DIR) {
      mkdirSync(SCREENSHOT_DIR, { recursive: true });
      await page.screenshot({ path: path.join(SCREENSHOT_DIR, "devpage-memories-off.png"), fullPage: true });
    }
    assert.deepEqual(problems, []);
  } finally {
    await browser.close();
  }
});
