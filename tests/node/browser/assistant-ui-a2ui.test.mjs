// A2UI in assistant-ui, in a real browser (Debian's chromium, driven by Playwright): the
// assistant-ui example (examples/assistant-ui: @assistant-ui/react-ag-ui 0.0.58 with its
// react-generative-ui override) on a server with A2UI=assistant-ui on aimock. The model builds a
// form (tests/fixtures/aimock-a2ui.json's "[a2ui] form": a TextField bound to /name and a Send
// button), the page paints it, the test types a name and clicks Send, and the agent's answer
// (aimock's fixture for a click whose context carries that name) names what was typed.
//
// Environment:
//   AGUI_A2UI_BASE (required, else skipped) a server with A2UI=assistant-ui on aimock with
//                  tests/fixtures/aimock-a2ui.json
//   CHROMIUM_PATH  (optional) the browser, default /usr/bin/chromium
//   SCREENSHOT_DIR (optional) screenshots land there
// The example must be installed and built first (scripts/install-test-tools.sh: `npm ci && npm
// run build` in examples/assistant-ui).
//
// Run: cd tests/node && AGUI_A2UI_BASE=… node --test browser/assistant-ui-a2ui.test.mjs

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
const EXAMPLE = path.join(ROOT, "examples/assistant-ui");
const BASE = process.env.AGUI_A2UI_BASE;
const CHROMIUM_PATH = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const SCREENSHOT_DIR = process.env.SCREENSHOT_DIR || "";
const TIMEOUT = 20_000;
const TYPED = "Katherine Johnson";

const FIXTURES = JSON.parse(readFileSync(path.join(ROOT, "tests/fixtures/aimock-a2ui.json"), "utf8")).fixtures;
const answerTo = (match) =>
  FIXTURES.find((f) => Object.entries(match).every(([key, value]) => f.match[key] === value)).response.content;

let browser;
let example;

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
  for (const needed of ["node_modules/@assistant-ui/react-ag-ui", "dist/index.html", "dist/app.js"]) {
    assert.ok(existsSync(path.join(EXAMPLE, needed)), `examples/assistant-ui/${needed} is missing: run scripts/install-test-tools.sh`);
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
  while (Date.now() < deadline && child.exitCode === null) {
    try {
      if ((await fetch(url)).ok) return { url, child, log };
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  child.kill("SIGKILL");
  assert.fail(`the example's server did not start at ${url}:\n${log.join("")}`);
}

async function screenshot(page, name) {
  if (!SCREENSHOT_DIR) return;
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOT_DIR, `assistant-ui-a2ui-${name}.png`), fullPage: true });
}

before(async () => {
  if (!BASE) return;
  example = await startExample();
  browser = await chromium.launch({ executablePath: CHROMIUM_PATH });
});

after(async () => {
  await browser?.close();
  example?.child.kill("SIGTERM");
});

test("assistant-ui: the model's form is painted, typed into and sent, and the answer names what was typed", { skip: !BASE && "AGUI_A2UI_BASE not set" }, async () => {
  const page = await browser.newPage();
  page.setDefaultTimeout(TIMEOUT);
  const problems = [];
  page.on("pageerror", (error) => problems.push(`pageerror: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(`console: ${message.text()}`);
  });
  await page.goto(example.url);
  await page.locator('[data-testid="composer"]').fill("[a2ui] form please");
  await page.locator('[data-testid="send"]').click();

  // The form, painted by react-generative-ui: its title, a text field and a Send button.
  const surface = page.locator('[data-testid="a2ui-surface"]');
  await surface.getByText("Who are you?").waitFor();
  const field = surface.locator("input").first();
  const send = surface.getByRole("button", { name: "Send" });
  await field.waitFor();
  await send.waitFor();
  assert.equal(await surface.count(), 1, "one surface painted");
  // The model's text after the call: the run is over, the page idle again.
  await page.getByText(answerTo({ toolCallId: "call_a2ui_form" }), { exact: true }).waitFor();
  await screenshot(page, "form");

  await field.fill(TYPED);
  await send.click();
  const answer = answerTo({ userMessage: `"name":"${TYPED}"` });
  assert.ok(answer.includes(TYPED));
  await page.locator('[data-testid="assistant-message"]').getByText(answer, { exact: true }).waitFor();
  await screenshot(page, "answered");
  assert.deepEqual(problems, []);
  await page.close();
});
