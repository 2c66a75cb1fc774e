// Makes docs/dev-page.png: the dev page after the background-colour round trip, its Memories
// panel open on two memories, in Debian's chromium driven by Playwright (as the browser tests).
// Against a server on the demo model with MEMORY=on; the memories are the caller's own.
//
// Run: MEMORY=on PORT=8788 cargo run   (in one shell), then
//      cd tests/node && node browser/dev-page-screenshot.mjs http://127.0.0.1:8788 ../../docs/dev-page.png

import { chromium } from "playwright";

const [base = "http://127.0.0.1:8788", out = "../../docs/dev-page.png"] = process.argv.slice(2);
const CHROMIUM_PATH = process.env.CHROMIUM_PATH || "/usr/bin/chromium";

async function call(method, route, body) {
  const response = await fetch(`${base}${route}`, {
    method,
    headers: { "content-type": "application/json" },
    body: body && JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${route}: ${response.status} ${await response.text()}`);
}

await call("DELETE", "/memories");
await call("POST", "/memories", { text: "Sam is vegetarian" });
await call("POST", "/memories", { text: "Sam lives in Lyon" });

const browser = await chromium.launch({ executablePath: CHROMIUM_PATH });
try {
  const context = await browser.newContext({ viewport: { width: 1000, height: 720 }, timezoneId: "Europe/Paris" });
  const page = await context.newPage();
  await page.goto(`${base}/`);
  await page.waitForSelector('#status[data-state="idle"]');
  await page.fill("#input", "Change background color to green");
  await page.click("#send");
  await page.waitForSelector('#status[data-state="done"]', { timeout: 30_000 });
  await page.click("#memories > summary");
  await page.locator("#memory-list .memory-text").nth(1).waitFor();
  await page.screenshot({ path: out });
  console.log(`wrote ${out}`);
} finally {
  await browser.close();
}
