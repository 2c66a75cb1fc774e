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
import { spawn } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { createServer } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ASSISTANT_UI = path.resolve(HERE, "../../../examples/assistant-ui");
const BASE = process.env.AGUI_MCP_APPS_BASE;
const CHROMIUM_PATH = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const SCREENSHOT_DIR = process.env.SCREENSHOT_DIR || "";
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

async function startExample(dir) {
  for (const needed of ["node_modules", "dist/index.html", "dist/app.js"]) {
    assert.ok(existsSync(path.join(dir, needed)), `${dir}/${needed} is missing: run scripts/install-test-tools.sh`);
  }
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const log = [];
  const child = spawn(process.execPath, [path.join(dir, "server.mjs")], {
    cwd: dir,
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
  await page.screenshot({ path: path.join(SCREENSHOT_DIR, `${name}.png`), fullPage: true });
}

/** A page that fails the test on any console error or uncaught exception. */
async function watchedPage() {
  const page = await browser.newPage();
  const problems = [];
  page.on("pageerror", (error) => problems.push(`pageerror: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(`console: ${message.text()}`);
  });
  return { page, problems };
}

before(async () => {
  assert.ok(BASE, "AGUI_MCP_APPS_BASE must name a server with the MCP App server in MCP_SERVERS");
  assistantUi = await startExample(ASSISTANT_UI);
  browser = await chromium.launch({ executablePath: CHROMIUM_PATH });
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
