// Sub-agents in a real browser (Debian's chromium, driven by Playwright), against the local
// coordinator server (AGENT_DEFAULT_PROFILE=coordinator, SUBAGENT_VISIBILITY=attributed, aimock's
// "[subagents] …" fixtures): the assistant-ui example (examples/assistant-ui, whose
// @assistant-ui/react-ag-ui nests a sub-agent's output under the tool call that delegated to it)
// shows the researcher's text inside the coordinator's `researcher` call, and the factchecker's
// inside the researcher's; the dev page (GET /) shows the same nesting.
//
// Environment:
//   AGUI_SUBAGENTS_BASE (required) the coordinator server
//   CHROMIUM_PATH       (optional) the browser, default /usr/bin/chromium
//   SCREENSHOT_DIR      (optional) screenshots land there
// The example must be installed and built first (scripts/install-test-tools.sh: `npm ci && npm
// run build` in examples/assistant-ui).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { collectProblems, launchChromium, screenshotter, serveAssistantUi } from "./pages.mjs";

const BASE = process.env.AGUI_SUBAGENTS_BASE;
const TIMEOUT = 20_000;

let browser;
let example;

const screenshot = screenshotter();

/// A page that fails the test on any console error or uncaught exception.
async function watchedPage() {
  const page = await browser.newPage();
  return { page, problems: collectProblems(page) };
}

before(async () => {
  assert.ok(BASE, "AGUI_SUBAGENTS_BASE must name the coordinator server");
  example = await serveAssistantUi(`${BASE}/agent`);
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  example?.child.kill("SIGTERM");
});

test("assistant-ui: the researcher's text appears nested under the coordinator's tool call", async () => {
  const { page, problems } = await watchedPage();
  await page.goto(example.url);
  await page.locator('[data-testid="composer"]').fill("[subagents] go deep");
  await page.locator('[data-testid="send"]').click();
  const call = page.locator('[data-testid="tool-call"][data-tool-name="researcher"]');
  const researcher = call.locator('[data-testid="subagent-message"][data-subagent-name="researcher"]');
  await researcher.getByText("Researcher: the factchecker confirms it.").waitFor({ timeout: TIMEOUT });
  // One level deeper: the factchecker inside the researcher's own call.
  const deeper = researcher.locator('[data-testid="tool-call"][data-tool-name="factchecker"] [data-subagent-name="factchecker"]');
  await deeper.getByText("Yes, the moon is far.").waitFor({ timeout: TIMEOUT });
  // The coordinator's own answer stays outside, after the call.
  const final = page.getByText("Coordinator: the fact was checked twice over.");
  await final.waitFor({ timeout: TIMEOUT });
  assert.equal(await call.locator("text=Coordinator: the fact was checked twice over.").count(), 0);
  const box = await researcher.boundingBox();
  const outer = await call.boundingBox();
  assert.ok(box.x > outer.x, "the nested output is indented under its call");
  await screenshot(page, "assistant-ui-subagents");
  assert.deepEqual(problems, []);
  await page.close();
});

test("dev page: sub-agent output is indented under its tool call", async () => {
  const { page, problems } = await watchedPage();
  await page.goto(`${BASE}/`);
  await page.locator("#input").fill("[subagents] go deep");
  await page.locator("#send").click();
  const call = page.locator('[data-tool-call-id="call_sa_deep"]');
  const box = call.locator(".subagent").first();
  await box.getByText("Researcher: the factchecker confirms it.").waitFor({ timeout: TIMEOUT });
  await box.locator(".subagent").getByText("Yes, the moon is far.").waitFor({ timeout: TIMEOUT });
  await page.getByText("Coordinator: the fact was checked twice over.").waitFor({ timeout: TIMEOUT });
  assert.ok((await box.boundingBox()).x > (await call.boundingBox()).x, "indented under the call");
  await screenshot(page, "devpage-subagents");
  assert.deepEqual(problems, []);
  await page.close();
});
