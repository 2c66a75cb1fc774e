// The example's server: the built app (dist/) and the CopilotKit runtime (/api/copilotkit), which
// reaches agui-lambda as a remote AG-UI agent the way CopilotKit documents it: a CopilotRuntime
// whose `agents` map holds an `HttpAgent` with the agent's URL.
//
//   AGENT_URL          the AG-UI endpoint (default http://127.0.0.1:8787/agent, i.e. `cargo run`)
//   AGENT_AUTH_HEADER  optional "Name: value" header sent with every agent request, e.g.
//                      "Authorization: Bearer …" or "x-api-key: …" for a deployed Function URL
//   AGENT_API_KEY      optional shorthand for "Authorization: Bearer $AGENT_API_KEY"
//   PORT, HOST         where to listen (default 3000 on 127.0.0.1)
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";

// CopilotKit's runtime reports anonymous usage unless told not to; this example keeps quiet by
// default (COPILOTKIT_TELEMETRY_DISABLED=false turns it back on). Set before the runtime loads.
process.env.COPILOTKIT_TELEMETRY_DISABLED ??= "true";
const { HttpAgent } = await import("@ag-ui/client");
const { CopilotRuntime, InMemoryAgentRunner } = await import("@copilotkit/runtime/v2");
const { createCopilotNodeListener } = await import("@copilotkit/runtime/v2/node");

const AGENT_URL = process.env.AGENT_URL || "http://127.0.0.1:8787/agent";
const PORT = Number(process.env.PORT || 3000);
const HOST = process.env.HOST || "127.0.0.1";
const DIST = fileURLToPath(new URL("./dist/", import.meta.url));
const BASE_PATH = "/api/copilotkit";

function agentHeaders() {
  const headers = {};
  const raw = process.env.AGENT_AUTH_HEADER;
  if (raw) {
    const colon = raw.indexOf(":");
    if (colon < 1) throw new Error(`AGENT_AUTH_HEADER must look like "Name: value", got ${JSON.stringify(raw)}`);
    headers[raw.slice(0, colon).trim()] = raw.slice(colon + 1).trim();
  }
  if (process.env.AGENT_API_KEY) headers.Authorization = `Bearer ${process.env.AGENT_API_KEY}`;
  return headers;
}

// agui-lambda keeps a run going when its connection closes (see the main README, "Run lifecycle"),
// so HttpAgent's abortRun(), which only closes the connection, would not stop it. This agent also
// posts the run's cancel, so CopilotChat's Stop button ends the run on the server too. The runtime
// clones the agent per request (the clone keeps this class) and calls abortRun() on Stop.
class AguiLambdaAgent extends HttpAgent {
  run(input) {
    this.activeRun = { threadId: input.threadId, runId: input.runId };
    return super.run(input);
  }

  abortRun() {
    const run = this.activeRun;
    if (run) {
      const base = this.url.replace(/\/(agent|send-message)?\/?$/, "");
      const url = `${base}/threads/${encodeURIComponent(run.threadId)}/runs/${encodeURIComponent(run.runId)}/cancel`;
      fetch(url, { method: "POST", headers: this.headers }).catch((error) => {
        console.error(`[copilotkit-example] cancel of run ${run.runId} failed: ${error.message}`);
      });
    }
    super.abortRun();
  }
}

const runtime = new CopilotRuntime({
  agents: { default: new AguiLambdaAgent({ url: AGENT_URL, headers: agentHeaders() }) },
  // Runs outlive the browser's connection; a reloaded page rejoins its thread (history and the
  // run still in progress) through the runtime's connect route.
  runner: new InMemoryAgentRunner(),
});
const copilotkit = createCopilotNodeListener({ runtime, basePath: BASE_PATH, activateChannels: false });

const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".woff2": "font/woff2",
  ".png": "image/png",
};

async function serveStatic(req, res) {
  const path = new URL(req.url, "http://localhost").pathname;
  const file = normalize(join(DIST, path === "/" ? "index.html" : decodeURIComponent(path)));
  if (!file.startsWith(DIST)) {
    res.writeHead(404).end();
    return;
  }
  try {
    const body = await readFile(file);
    res.writeHead(200, { "content-type": TYPES[extname(file)] || "application/octet-stream" }).end(body);
  } catch {
    if (extname(path)) {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
      return;
    }
    // Any other path is the app itself (one page).
    try {
      const body = await readFile(join(DIST, "index.html"));
      res.writeHead(200, { "content-type": TYPES[".html"] }).end(body);
    } catch {
      res.writeHead(500, { "content-type": "text/plain" }).end("dist/ is missing: run `npm run build` first\n");
    }
  }
}

const server = createServer((req, res) => {
  if (req.url.startsWith(BASE_PATH)) {
    copilotkit(req, res).catch((error) => {
      console.error("[copilotkit-example] runtime error", error);
      if (!res.headersSent) res.writeHead(500).end();
    });
    return;
  }
  if (req.method !== "GET" && req.method !== "HEAD") {
    res.writeHead(405).end();
    return;
  }
  serveStatic(req, res);
});

server.listen(PORT, HOST, () => {
  console.log(`[copilotkit-example] http://${HOST}:${server.address().port}/ -> agent ${AGENT_URL}`);
});
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => process.exit(0));
