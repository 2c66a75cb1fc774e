// A real MCP server with an MCP App, on loopback: the official SDK's McpServer over streamable
// HTTP, its tools and view registered with ext-apps' server helpers. It offers
//   weather_view    a UI tool (visible to the model and to views) shown in ui://weather/view.html
//   refresh_weather a tool only views may call (`_meta.ui.visibility: ["app"]`)
//   forecast_text   a plain tool only the model may call (`visibility: ["model"]`)
// As the spec asks of servers, the view and the app-only tool exist only for a host that
// advertised the UI extension in `initialize`: a host that did not gets weather_view as a
// text-only tool. The view is a small MCP Apps client written against the spec's postMessage
// protocol (no SDK, no network): it shows the call's input and result, and has buttons that call
// the app-only tool and the model-only tool through the host.
//
//   PORT   where to listen on 127.0.0.1 (default 3920). GET /health answers once listening.
import { createServer } from "node:http";
import { randomUUID } from "node:crypto";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import {
  EXTENSION_ID,
  RESOURCE_MIME_TYPE,
  registerAppResource,
  registerAppTool,
} from "@modelcontextprotocol/ext-apps/server";
import { z } from "zod";

const PORT = Number(process.env.PORT || 3920);
const VIEW = "ui://weather/view.html";
const WEATHER = { Oslo: { celsius: 4, sky: "light rain" }, Lisbon: { celsius: 19, sky: "sunny" } };
let refreshes = 0;

const VIEW_HTML = `<!doctype html>
<html><head><meta charset="utf-8"><title>Weather view</title>
<style>body{font:14px system-ui;margin:8px}button{margin-right:6px}</style></head>
<body>
<h3 data-testid="weather-title">Weather view</h3>
<p data-testid="weather-input">no input yet</p>
<p data-testid="weather-result">no result yet</p>
<button data-testid="refresh">Refresh</button>
<button data-testid="forbidden">Forecast (model only)</button>
<p data-testid="refresh-result"></p>
<p data-testid="forbidden-result"></p>
<script>
let nextId = 1;
const pending = new Map();
let city = "Oslo";
const show = (id, text) => { document.querySelector('[data-testid="' + id + '"]').textContent = text; };
const textOf = (result) => (result && Array.isArray(result.content) ? result.content : [])
  .filter((part) => part && part.type === "text").map((part) => part.text).join(" ");
function request(method, params) {
  const id = nextId++;
  window.parent.postMessage({ jsonrpc: "2.0", id, method, params }, "*");
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
}
function notify(method, params) { window.parent.postMessage({ jsonrpc: "2.0", method, params }, "*"); }
window.addEventListener("message", (event) => {
  const message = event.data;
  if (!message || message.jsonrpc !== "2.0") return;
  if (message.method === undefined && pending.has(message.id)) {
    const { resolve, reject } = pending.get(message.id);
    pending.delete(message.id);
    if (message.error) reject(new Error(message.error.message || "error")); else resolve(message.result);
    return;
  }
  if (message.method === "ui/notifications/tool-input") {
    city = (message.params && message.params.arguments && message.params.arguments.city) || city;
    show("weather-input", "city: " + city);
  } else if (message.method === "ui/notifications/tool-result") {
    show("weather-result", "result: " + textOf(message.params));
  } else if (message.id !== undefined && message.method) {
    // A host's request (ping, ui/resource-teardown): answered empty.
    window.parent.postMessage({ jsonrpc: "2.0", id: message.id, result: {} }, "*");
  }
});
async function callTool(name, into) {
  try {
    const result = await request("tools/call", { name, arguments: { city } });
    show(into, (result && result.isError ? "refused: " : "ok: ") + textOf(result));
  } catch (error) {
    show(into, "failed: " + error.message);
  }
}
document.querySelector('[data-testid="refresh"]').onclick = () => callTool("refresh_weather", "refresh-result");
document.querySelector('[data-testid="forbidden"]').onclick = () => callTool("forecast_text", "forbidden-result");
(async () => {
  await request("ui/initialize", {
    appInfo: { name: "weather-view", version: "1.0.0" },
    appCapabilities: {},
    protocolVersion: "2026-01-26",
  });
  notify("ui/notifications/initialized", {});
  const size = () => notify("ui/notifications/size-changed", { height: document.documentElement.scrollHeight });
  new ResizeObserver(size).observe(document.body);
  size();
})();
</script>
</body></html>`;

const weatherText = (city) => {
  const weather = WEATHER[city] ?? { celsius: 12, sky: "cloudy" };
  return { text: `Weather in ${city}: ${weather.celsius} °C, ${weather.sky}`, weather: { city, ...weather } };
};

/** The server one session gets: with the view when the host advertised MCP Apps. */
function serverFor(capabilities) {
  const server = new McpServer({ name: "weather", version: "1.0.0" });
  const ui = capabilities?.extensions?.[EXTENSION_ID];
  const showsViews = Array.isArray(ui?.mimeTypes) && ui.mimeTypes.includes(RESOURCE_MIME_TYPE);
  const weatherView = async ({ city }) => {
    const { text, weather } = weatherText(city);
    return { content: [{ type: "text", text }], structuredContent: weather };
  };
  const viewConfig = {
    title: "Weather view",
    description: "Shows the weather of a city in an interactive view",
    inputSchema: { city: z.string() },
  };
  if (showsViews) {
    registerAppTool(server, "weather_view", { ...viewConfig, _meta: { ui: { resourceUri: VIEW } } }, weatherView);
    registerAppTool(
      server,
      "refresh_weather",
      {
        description: "Refreshes the view's weather (for the view only)",
        inputSchema: { city: z.string() },
        _meta: { ui: { resourceUri: VIEW, visibility: ["app"] } },
      },
      async ({ city }) => {
        refreshes += 1;
        return { content: [{ type: "text", text: `Refreshed ${city}: ${weatherText(city).text} (refresh ${refreshes})` }] };
      },
    );
    registerAppResource(server, "Weather view", VIEW, { description: "The weather view" }, async () => ({
      contents: [
        { uri: VIEW, mimeType: RESOURCE_MIME_TYPE, text: VIEW_HTML, _meta: { ui: { prefersBorder: true } } },
      ],
    }));
  } else {
    server.registerTool("weather_view", viewConfig, weatherView);
  }
  server.registerTool(
    "forecast_text",
    {
      description: "Tomorrow's forecast as text (for the model only)",
      inputSchema: { city: z.string() },
      _meta: { ui: { visibility: ["model"] } },
    },
    async ({ city }) => ({ content: [{ type: "text", text: `Tomorrow in ${city}: sunny spells` }] }),
  );
  return server;
}

const sessions = new Map();

async function readJson(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const text = Buffer.concat(chunks).toString("utf8");
  return text ? JSON.parse(text) : undefined;
}

async function handle(req, res) {
  const path = new URL(req.url, "http://localhost").pathname;
  if (path === "/health") return res.writeHead(200, { "content-type": "text/plain" }).end("ok\n");
  if (path !== "/mcp") return res.writeHead(404).end();
  const sessionId = req.headers["mcp-session-id"];
  const body = req.method === "POST" ? await readJson(req) : undefined;
  let transport = sessionId ? sessions.get(sessionId) : undefined;
  if (!transport && req.method === "POST" && isInitializeRequest(body)) {
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => sessions.set(id, transport),
    });
    transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
    await serverFor(body.params?.capabilities).connect(transport);
  }
  if (!transport) {
    return res
      .writeHead(sessionId ? 404 : 400, { "content-type": "application/json" })
      .end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: "no such session" }, id: null }));
  }
  await transport.handleRequest(req, res, body);
}

const http = createServer((req, res) => {
  handle(req, res).catch((error) => {
    console.error("[mcp-apps-server]", error);
    if (!res.headersSent) res.writeHead(500).end();
  });
});
http.listen(PORT, "127.0.0.1", () => console.log(`[mcp-apps-server] http://127.0.0.1:${http.address().port}/mcp`));
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => process.exit(0));
