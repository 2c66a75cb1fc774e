// Generative UI in the CopilotKit example (examples/copilotkit, @copilotkit/react-core 1.74) in a
// real browser (Debian's chromium driven by Playwright), its runtime the function's /copilotkit:
// - MCP Apps: the server's MCP_SERVERS lists the MCP App server of tests/node/mcp-apps-server.mjs
//   as `weather`; the model (aimock, "[mcp-apps] show the weather in Oslo") calls its UI tool, and
//   CopilotKit's own MCP Apps renderer (built into react-core 1.74: the `mcp-apps` activity alone
//   turns it on, the page registers nothing) shows the view in its iframe after the call. The view
//   is fetched, and its tools/call of the app-only tool answered, through the function
//   (forwardedProps.__proxiedMCPRequest on /copilotkit/agent/{id}/run); its call of a model-only
//   tool is refused; the model's next text names the result; a reload shows the view again.
// - Open Generative UI: the server's OPEN_GENERATIVE_UI=true makes /info say
//   openGenerativeUIEnabled, so CopilotKit offers its generateSandboxedUi tool; aimock writes the
//   call slowly ("[ogui] sketch a card slowly", 12 characters every 40 ms) and CopilotKit shows
//   the preview of the HTML before the call ends, then the final sandbox (its script ran), then
//   the follow-up run answers.
// CopilotKit's MCP sandbox is an inline document (srcdoc) and OGUI's is @jetbrains/websandbox:
// no outside host is needed.
//
// Environment:
//   AGUI_MCP_APPS_BASE (the tests skip without it) a server started with MCP_SERVERS naming the
//                      MCP App server as `weather`, OPEN_GENERATIVE_UI=true and
//                      CORS_ALLOWED_ORIGINS=* (the page has its own origin)
//   CHROMIUM_PATH      (optional) the browser, default /usr/bin/chromium
//   SCREENSHOT_DIR     (optional) screenshots land there
// The example must be installed and built first (scripts/install-test-tools.sh).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { collectProblems, launchChromium, screenshotter, serveCopilotKit } from "./pages.mjs";

const BASE = process.env.AGUI_MCP_APPS_BASE;
const TIMEOUT = 20_000;
const skip = BASE ? false : "AGUI_MCP_APPS_BASE is not set";

const ASK_WEATHER = "[mcp-apps] show the weather in Oslo";
const WEATHER_ANSWER = "The weather view shows Oslo at 4 °C with light rain.";
const ASK_CARD = "[ogui] sketch a card slowly";
const CARD_ANSWER = "The card is on the page.";

const TEXTAREA = '[data-testid="copilot-chat-textarea"]';
const SEND = '[data-testid="copilot-send-button"]';
const STOP = `${SEND}:has(svg.lucide-square)`;
const ASSISTANT = '[data-testid="copilot-assistant-message"]';
const MCP_FRAME = 'iframe[data-testid="mcp-app-iframe"]';

let browser;
let pageServer;

before(async () => {
  if (skip) return;
  pageServer = await serveCopilotKit();
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  pageServer?.child.kill("SIGTERM");
});

// A fresh context (fresh localStorage, so a new thread) on the page; the run requests that carry
// a view's MCP request are recorded.
async function openPage(t) {
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(TIMEOUT);
  const problems = collectProblems(page, "page error");
  const proxied = [];
  page.on("request", (request) => {
    if (request.method() !== "POST" || !/\/copilotkit\/agent\/[^/]+\/run$/.test(new URL(request.url()).pathname)) return;
    const mcp = JSON.parse(request.postData() ?? "{}").forwardedProps?.__proxiedMCPRequest;
    if (mcp) proxied.push({ method: mcp.method, name: mcp.params?.name ?? mcp.params?.uri });
  });
  await page.goto(`${pageServer.url}/?runtime=${encodeURIComponent(`${BASE}/copilotkit`)}`);
  await page.waitForSelector(TEXTAREA);
  t.after(async () => {
    if (problems.length) t.diagnostic(`browser said:\n${problems.join("\n")}`);
    await context.close();
  });
  return { page, problems, proxied };
}

const screenshot = screenshotter("copilotkit-");

async function send(page, text) {
  await page.fill(TEXTAREA, text);
  await page.click(SEND);
}

const waitForAnswer = (page, text) =>
  page.waitForFunction(
    ([selector, expected]) => [...document.querySelectorAll(selector)].some((el) => el.innerText.trim() === expected),
    [ASSISTANT, text],
  );
const waitIdle = (page) => page.waitForSelector(STOP, { state: "detached" });
const threadIdOf = (page) => page.locator('[data-testid="thread-id"]').innerText();

async function thread(threadId) {
  const response = await fetch(`${BASE}/threads/${threadId}`);
  assert.equal(response.status, 200, `GET /threads/${threadId}`);
  return response.json();
}

// CopilotKit's frame holds a sandbox proxy page, which holds the view itself.
const viewIn = (page) => page.frameLocator(MCP_FRAME).frameLocator("iframe");

test("MCP Apps: CopilotKit shows the view after the call, its calls go through the function, a reload shows it again", { skip }, async (t) => {
  // What CopilotKit learns of the agent's tools: the UI tool, never the app-only one.
  const info = await (await fetch(`${BASE}/copilotkit/info`)).json();
  const tools = info.agents.default.capabilities.tools.items.map((tool) => tool.name);
  assert.ok(tools.includes("weather__weather_view"), tools.join(", "));
  assert.ok(!tools.some((name) => name.includes("refresh_weather")), `the app-only tool is not offered: ${tools.join(", ")}`);
  assert.equal(info.openGenerativeUIEnabled, true);

  const { page, problems, proxied } = await openPage(t);
  await send(page, ASK_WEATHER);
  await waitForAnswer(page, WEATHER_ANSWER);
  await waitIdle(page);

  const view = viewIn(page);
  await view.getByTestId("weather-input").getByText("city: Oslo").waitFor();
  await view.getByTestId("weather-result").getByText("result: Weather in Oslo: 4 °C, light rain").waitFor();
  // The view comes after the call: its frame sits below the tool call's message, before the answer.
  const order = await page.evaluate(
    ([frame, assistant, answer]) => {
      const iframe = document.querySelector(frame);
      const said = [...document.querySelectorAll(assistant)].find((el) => el.innerText.trim() === answer);
      return iframe && said ? iframe.compareDocumentPosition(said) & Node.DOCUMENT_POSITION_FOLLOWING : -1;
    },
    [MCP_FRAME, ASSISTANT, WEATHER_ANSWER],
  );
  assert.ok(order > 0, "the view is shown before the model's answer that names its result");

  await view.getByTestId("refresh").click();
  await view.getByTestId("refresh-result").getByText(/^ok: Refreshed Oslo: Weather in Oslo/).waitFor();
  await view.getByTestId("forbidden").click();
  await view
    .getByTestId("forbidden-result")
    .getByText("refused: forecast_text is not one of this server's tools a view may call")
    .waitFor();
  assert.deepEqual(proxied, [
    { method: "resources/read", name: "ui://weather/view.html" },
    { method: "tools/call", name: "refresh_weather" },
    { method: "tools/call", name: "forecast_text" },
  ]);
  await screenshot(page, "mcp-app");

  // The view's requests wrote nothing: the thread holds the one conversation.
  const threadId = await threadIdOf(page);
  const stored = await thread(threadId);
  assert.equal(stored.messages.filter((m) => m.role === "user").length, 1, "one user message: the view's requests are not turns");
  assert.equal(stored.messages.at(-1).content, WEATHER_ANSWER);

  // A reload restores the thread from the function (/connect): the view is shown again.
  await page.reload();
  await page.waitForSelector(TEXTAREA);
  assert.equal(await threadIdOf(page), threadId);
  await waitForAnswer(page, WEATHER_ANSWER);
  const again = viewIn(page);
  await again.getByTestId("weather-input").getByText("city: Oslo").waitFor();
  await again.getByTestId("weather-result").getByText("result: Weather in Oslo: 4 °C, light rain").waitFor();
  assert.equal(await page.locator(MCP_FRAME).count(), 1, "one view after the reload");
  await screenshot(page, "mcp-app-reloaded");
  assert.deepEqual(problems, []);
});

test("Open Generative UI: CopilotKit previews the HTML while the model writes it, then shows the final sandbox", { skip }, async (t) => {
  const { page, problems } = await openPage(t);
  // Every 20 ms, what each frame on the page shows of the card (a preview is a frame whose card
  // has its first line but not yet its last one, or whose script has not run).
  const seen = [];
  let watching = true;
  const watcher = (async () => {
    while (watching) {
      for (const frame of page.frames()) {
        if (frame === page.mainFrame()) continue;
        const state = await frame
          .evaluate(() => ({
            first: !!document.querySelector('[data-testid="ogui-first"]'),
            last: !!document.querySelector('[data-testid="ogui-last"]'),
            status: document.querySelector('[data-testid="ogui-status"]')?.textContent ?? null,
            length: document.body.innerText.length,
          }))
          .catch(() => null);
        if (state?.first) seen.push({ ...state, answered: await answered(page) });
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  // The watcher stops whatever happens, or a failure here would leave node --test waiting on it.
  try {
    await send(page, ASK_CARD);
    await waitForAnswer(page, CARD_ANSWER);
    await waitIdle(page);
    // The final sandbox: the whole card, its script run.
    const deadline = Date.now() + TIMEOUT;
    while (!seen.some((s) => s.status === "final sandbox ready") && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    watching = false;
    await watcher;
  }
  const previews = seen.filter((s) => !s.last);
  assert.ok(previews.length > 0, `a partial card was shown while the call was written: ${JSON.stringify(seen.slice(0, 5))}`);
  assert.ok(previews.every((s) => !s.answered), "the preview came before the follow-up answer");
  const lengths = [...new Set(previews.map((s) => s.length))];
  t.diagnostic(`${seen.length} looks at the card, ${previews.length} at a preview, its text ${lengths.join(" → ")} characters long`);
  // CopilotKit repaints a preview at most once a second (its throttle), so the card, written in
  // about a second, is previewed once or twice; each preview is shorter than the final card.
  const finalLength = seen.find((s) => s.status === "final sandbox ready")?.length ?? 0;
  assert.ok(lengths.every((length) => length < finalLength), `previews ${lengths.join(", ")} vs the final ${finalLength}`);
  assert.ok(seen.some((s) => s.last && s.status === "final sandbox ready"), "the final sandbox ran the card's script");
  const firstFinal = seen.findIndex((s) => s.status === "final sandbox ready");
  assert.ok(seen.findIndex((s) => !s.last) < firstFinal, "the preview came before the final sandbox");
  await screenshot(page, "ogui-card");

  // The function kept the frontend tool's call and CopilotKit's answer to it, then the follow-up.
  const stored = await thread(await threadIdOf(page));
  const call = stored.messages.flatMap((m) => m.toolCalls ?? []).find((c) => c.function.name === "generateSandboxedUi");
  assert.ok(call, "the generateSandboxedUi call is in the thread");
  assert.equal(stored.messages.find((m) => m.role === "tool" && m.toolCallId === call.id)?.content, "UI generated");
  assert.equal(stored.messages.at(-1).content, CARD_ANSWER);
  assert.deepEqual(problems, []);
});

const answered = (page) =>
  page
    .evaluate(
      ([selector, expected]) => [...document.querySelectorAll(selector)].some((el) => el.innerText.trim() === expected),
      [ASSISTANT, CARD_ANSWER],
    )
    .catch(() => false);
