// Bundles src/ into dist/ with esbuild: offline, no config beyond this file.
import { build } from "esbuild";
import { copyFile, mkdir, rm } from "node:fs/promises";

const started = Date.now();
await rm("dist", { recursive: true, force: true });
await mkdir("dist");
const result = await build({
  entryPoints: { app: "src/main.jsx" },
  outdir: "dist",
  bundle: true,
  splitting: true,
  chunkNames: "chunks/[name]-[hash]",
  assetNames: "assets/[name]-[hash]",
  format: "esm",
  jsx: "automatic",
  minify: true,
  sourcemap: false,
  target: "es2022",
  define: { "process.env.NODE_ENV": '"production"' },
  loader: { ".woff2": "file", ".woff": "file", ".ttf": "file", ".svg": "file", ".png": "file" },
  logLevel: "warning",
  metafile: true,
});
await copyFile("index.html", "dist/index.html");
const outputs = Object.entries(result.metafile.outputs);
const kb = (bytes) => `${(bytes / 1024).toFixed(0)} KB`;
const total = outputs.reduce((sum, [, out]) => sum + out.bytes, 0);
const entry = outputs.filter(([file]) => /^dist\/app\.(js|css)$/.test(file)).map(([file, out]) => `${file} ${kb(out.bytes)}`);
console.log(`built in ${Date.now() - started} ms: ${entry.join(", ")}; ${outputs.length} files, ${kb(total)} in all`);
