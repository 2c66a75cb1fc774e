// The example's server: the built page (dist/) and /api/agent, which forwards the page's AG-UI
// requests to agui-lambda and streams its answer back, so the browser never needs the function's
// URL or credentials; /api/mcp-apps/{threadId} forwards an MCP App view's requests to the
// function's POST /threads/{threadId}/mcp-apps the same way.
//
//   AGENT_URL          agui-lambda's AG-UI endpoint (default http://127.0.0.1:8787/agent)
//   AGENT_API_KEY      optional: sent as "Authorization: Bearer …"
//   PORT, HOST         where to listen (default 3001 on 127.0.0.1)
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { Readable } from "node:stream";
import { extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";

const AGENT_URL = process.env.AGENT_URL || "http://127.0.0.1:8787/agent";
const PORT = Number(process.env.PORT || 3001);
const HOST = process.env.HOST || "127.0.0.1";
const DIST = fileURLToPath(new URL("./dist/", import.meta.url));
const TYPES = { ".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8" };

async function forward(req, res) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const headers = { "content-type": "application/json", accept: "text/event-stream" };
  if (process.env.AGENT_API_KEY) headers.authorization = `Bearer ${process.env.AGENT_API_KEY}`;
  const upstream = await fetch(AGENT_URL, { method: "POST", headers, body: Buffer.concat(chunks) });
  res.writeHead(upstream.status, { "content-type": upstream.headers.get("content-type") ?? "application/json", "cache-control": "no-cache" });
  if (upstream.body) Readable.fromWeb(upstream.body).pipe(res);
  else res.end();
}

/** An MCP App view's request, to the function's route for the thread it shows in. */
async function forwardView(req, res, threadId) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const headers = { "content-type": "application/json" };
  if (process.env.AGENT_API_KEY) headers.authorization = `Bearer ${process.env.AGENT_API_KEY}`;
  const target = new URL(`threads/${encodeURIComponent(threadId)}/mcp-apps`, AGENT_URL);
  const upstream = await fetch(target, { method: "POST", headers, body: Buffer.concat(chunks) });
  res.writeHead(upstream.status, { "content-type": upstream.headers.get("content-type") ?? "application/json" });
  res.end(Buffer.from(await upstream.arrayBuffer()));
}

async function serveStatic(req, res) {
  const path = new URL(req.url, "http://localhost").pathname;
  const file = normalize(join(DIST, path === "/" ? "index.html" : decodeURIComponent(path)));
  if (!file.startsWith(DIST)) return res.writeHead(404).end();
  try {
    res.writeHead(200, { "content-type": TYPES[extname(file)] || "application/octet-stream" }).end(await readFile(file));
  } catch {
    res.writeHead(404, { "content-type": "text/plain" }).end(extname(path) ? "not found\n" : "dist/ is missing: run `npm run build` first\n");
  }
}

const server = createServer((req, res) => {
  if (req.url === "/api/agent" && req.method === "POST") {
    forward(req, res).catch((error) => {
      console.error("[assistant-ui-example] the agent could not be reached", error);
      if (!res.headersSent) res.writeHead(502).end();
    });
    return;
  }
  const view = /^\/api\/mcp-apps\/([^/?]+)$/.exec(req.url);
  if (view && req.method === "POST") {
    forwardView(req, res, decodeURIComponent(view[1])).catch((error) => {
      console.error("[assistant-ui-example] the agent could not be reached", error);
      if (!res.headersSent) res.writeHead(502).end();
    });
    return;
  }
  if (req.method !== "GET" && req.method !== "HEAD") return res.writeHead(405).end();
  serveStatic(req, res);
});
server.listen(PORT, HOST, () => console.log(`[assistant-ui-example] http://${HOST}:${server.address().port}/ -> agent ${AGENT_URL}`));
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => process.exit(0));
