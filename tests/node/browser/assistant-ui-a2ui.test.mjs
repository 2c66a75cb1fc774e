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
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { collectProblems, launchChromium, screenshotter, serveAssistantUi } from "./pages.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const BASE = process.env.AGUI_A2UI_BASE;
const TIMEOUT = 20_000;
const TYPED = "Katherine Johnson";

const FIXTURES = JSON.parse(readFileSync(path.join(ROOT, "tests/fixtures/aimock-a2ui.json"), "utf8")).fixtures;
const answerTo = (match) =>
  FIXTURES.find((f) => Object.entries(match).every(([key, value]) => f.match[key] === value)).response.content;

let browser;
let example;

const screenshot = screenshotter("assistant-ui-a2ui-");

before(async () => {
  if (!BASE) return;
  example = await serveAssistantUi(`${BASE}/agent`);
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  example?.child.kill("SIGTERM");
});

test("assistant-ui: the model's form is painted, typed into and sent, and the answer names what was typed", { skip: !BASE && "AGUI_A2UI_BASE not set" }, async () => {
  const page = await browser.newPage();
  page.setDefaultTimeout(TIMEOUT);
  const problems = collectProblems(page);
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
