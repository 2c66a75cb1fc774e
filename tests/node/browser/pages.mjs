// What the browser tests that drive the examples share: Debian's chromium launched as they all
// launch it, a page's errors collected, screenshots into SCREENSHOT_DIR, and the two example pages
// served on a free loopback port of their own: examples/assistant-ui (its server.mjs, which
// forwards to the agent at AGENT_URL) and examples/copilotkit (its serve.mjs, static files only;
// the page names its runtime in ?runtime=). Not a test file itself (node --test runs only
// *.test.mjs and the like here), so it runs nothing on import.
//
// Environment:
//   CHROMIUM_PATH  (optional) the browser, default /usr/bin/chromium
//   SCREENSHOT_DIR (optional) screenshots land there
// The examples must be installed and built first (scripts/install-test-tools.sh).

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { createServer } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const ASSISTANT_UI = path.join(ROOT, "examples/assistant-ui");
const COPILOTKIT = path.join(ROOT, "examples/copilotkit");
const CHROMIUM_PATH = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const SCREENSHOT_DIR = process.env.SCREENSHOT_DIR || "";

/** Headless chromium, launched by its path. */
export function launchChromium() {
  return chromium.launch({ executablePath: CHROMIUM_PATH });
}

/**
 * The page's uncaught exceptions and console errors, as they come: `${pageErrorLabel}: message`
 * and `console: text`. The tests assert the list stays empty.
 */
export function collectProblems(page, pageErrorLabel = "pageerror") {
  const problems = [];
  page.on("pageerror", (error) => problems.push(`${pageErrorLabel}: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(`console: ${message.text()}`);
  });
  return problems;
}

/** A screenshot function: `(page, name)` saves SCREENSHOT_DIR/`${prefix}${name}.png`, if set. */
export function screenshotter(prefix = "") {
  return async (page, name) => {
    if (!SCREENSHOT_DIR) return;
    mkdirSync(SCREENSHOT_DIR, { recursive: true });
    await page.screenshot({ path: path.join(SCREENSHOT_DIR, `${prefix}${name}.png`), fullPage: true });
  };
}

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

/**
 * examples/assistant-ui served on its own port, its server forwarding to `agentUrl` (a server's
 * /agent). Resolves to { url, child, log } once it answers; the caller kills `child`.
 */
export async function serveAssistantUi(agentUrl) {
  for (const needed of ["node_modules/@assistant-ui/react-ag-ui", "dist/index.html", "dist/app.js"]) {
    assert.ok(existsSync(path.join(ASSISTANT_UI, needed)), `examples/assistant-ui/${needed} is missing: run scripts/install-test-tools.sh`);
  }
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const log = [];
  const child = spawn(process.execPath, [path.join(ASSISTANT_UI, "server.mjs")], {
    cwd: ASSISTANT_UI,
    env: { ...process.env, PORT: String(port), HOST: "127.0.0.1", AGENT_URL: agentUrl },
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

/**
 * examples/copilotkit's built page served on its own origin (static files only). Resolves to
 * { url, child } once it answers; the caller kills `child`.
 */
export async function serveCopilotKit() {
  for (const needed of ["dist/index.html", "dist/app.js"]) {
    assert.ok(
      existsSync(path.join(COPILOTKIT, needed)),
      `examples/copilotkit/${needed} is missing: run scripts/install-test-tools.sh (npm ci && npm run build there)`,
    );
  }
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, [path.join(COPILOTKIT, "serve.mjs")], {
    cwd: COPILOTKIT,
    env: { ...process.env, PORT: String(port), HOST: "127.0.0.1" },
    stdio: "ignore",
  });
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(`${url}/`)).ok) return { url, child };
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  child.kill("SIGKILL");
  assert.fail(`the example's page did not start at ${url}`);
}
