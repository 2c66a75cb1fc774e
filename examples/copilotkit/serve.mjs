// Serves the built page (dist/) on its own origin, the way any static host would: the page
// talks to agui-lambda itself (its runtime URL), never to this server.
//
//   PORT, HOST   where to listen (default 3000 on 127.0.0.1)
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";

const DIST = fileURLToPath(new URL("./dist/", import.meta.url));
const PORT = Number(process.env.PORT || 3000);
const HOST = process.env.HOST || "127.0.0.1";
const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".woff2": "font/woff2",
  ".woff": "font/woff",
  ".ttf": "font/ttf",
  ".png": "image/png",
};

const server = createServer(async (req, res) => {
  if (req.method !== "GET" && req.method !== "HEAD") {
    res.writeHead(405).end();
    return;
  }
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
    try {
      res.writeHead(200, { "content-type": TYPES[".html"] }).end(await readFile(join(DIST, "index.html")));
    } catch {
      res.writeHead(500, { "content-type": "text/plain" }).end("dist/ is missing: run `npm run build` first\n");
    }
  }
});

server.listen(PORT, HOST, () => {
  console.log(`[copilotkit-example] http://${HOST}:${server.address().port}/`);
});
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => process.exit(0));
