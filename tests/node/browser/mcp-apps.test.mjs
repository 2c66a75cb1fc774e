// MCP Apps in a real browser (Debian's chromium, driven by Playwright), against a local server
// on aimock whose MCP_SERVERS lists the MCP App server of tests/node/mcp-apps-server.mjs as
// `weather`: the assistant-ui example (examples/assistant-ui, @assistant-ui/react-ag-ui 0.0.58)
// shows the UI tool's view in its sandboxed frame after the call, the view's call of the tool
// only views may call round-trips through the function, its call of the tool only the model
// may call is refused, and the model's answer names the result.
//
// assistant-ui's frame loads a helper page from an outside host (`*.scf.auiusercontent.com`,
// safe-content-frame's shim); with no network here, Playwright answers that host with a local
// page that speaks the same postMessage protocol (SHIM below): it takes the content the host
// posts, writes it into its own document, and acknowledges on the channel it was given.
//
// Environment:
//   AGUI_MCP_APPS_BASE (required) that server
//   CHROMIUM_PATH      (optional) the browser, default /usr/bin/chromium
//   SCREENSHOT_DIR     (optional) screenshots land there
// The example must be installed and built first (scripts/install-test-tools.sh).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { collectProblems, launchChromium, screenshotter, serveAssistantUi } from "./pages.mjs";

const BASE = process.env.AGUI_MCP_APPS_BASE;
const TIMEOUT = 20_000;
const ASK = "[mcp-apps] show the weather in Oslo";

// The stand-in for safe-content-frame's shim: it announces itself, then renders the HTML the
// host posts ({body: ArrayBuffer, mimeType, salt}) as its own document and reports it loaded on
// the MessagePort that came with it. The view then talks to the host as from the frame itself.
const SHIM = `<!doctype html><meta charset="utf-8"><script>
const parentOrigin = new URLSearchParams(location.search).get("origin");
window.addEventListener("message", (event) => {
  if (event.origin !== parentOrigin || !event.data || !(event.data.body instanceof ArrayBuffer)) return;
  const port = event.ports[0];
  const html = new TextDecoder().decode(event.data.body);
  document.open();
  document.write(html);
  document.close();
  if (port) port.postMessage({ type: "msg" });
});
window.parent.postMessage({ type: "ready" }, parentOrigin);
</script>`;

let browser;
let assistantUi;

const screenshot = screenshotter();

/** A page that fails the test on any console error or uncaught exception. */
async function watchedPage() {
  const page = await browser.newPage();
  return { page, problems: collectProblems(page) };
}

before(async () => {
  assert.ok(BASE, "AGUI_MCP_APPS_BASE must name a server with the MCP App server in MCP_SERVERS");
  assistantUi = await serveAssistantUi(`${BASE}/agent`);
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  assistantUi?.child.kill("SIGTERM");
});

test("assistant-ui: the MCP App's view shows after the call and its calls go through the function", async () => {
  const { page, problems } = await watchedPage();
  const shims = [];
  await page.route("https://*.scf.auiusercontent.com/**", (route) => {
    shims.push(route.request().url());
    return route.fulfill({ status: 200, contentType: "text/html; charset=utf-8", body: SHIM });
  });
  const viewRequests = [];
  page.on("request", (request) => {
    if (request.url().includes("/api/mcp-apps/")) viewRequests.push(JSON.parse(request.postData()).method);
  });
  await page.goto(assistantUi.url);
  await page.locator('[data-testid="composer"]').fill(ASK);
  await page.locator('[data-testid="send"]').click();
  await page.getByText("The weather view shows Oslo at 4 °C with light rain.").waitFor({ timeout: TIMEOUT });

  const frame = page.frameLocator('iframe[src*="scf.auiusercontent.com"]');
  await frame.getByTestId("weather-result").getByText("result: Weather in Oslo: 4 °C, light rain").waitFor({ timeout: TIMEOUT });
  await frame.getByTestId("weather-input").getByText("city: Oslo").waitFor({ timeout: TIMEOUT });
  assert.equal(shims.length, 1, "one frame, from the stand-in host");

  await frame.getByTestId("refresh").click();
  await frame.getByTestId("refresh-result").getByText(/^ok: Refreshed Oslo: Weather in Oslo/).waitFor({ timeout: TIMEOUT });
  await frame.getByTestId("forbidden").click();
  await frame
    .getByTestId("forbidden-result")
    .getByText("refused: forecast_text is not one of this server's tools a view may call")
    .waitFor({ timeout: TIMEOUT });
  assert.deepEqual(viewRequests, ["mcp-apps/read-resource", "tools/call", "tools/call"]);
  await screenshot(page, "assistant-ui-mcp-app");
  assert.deepEqual(problems, []);
  await page.close();
});
