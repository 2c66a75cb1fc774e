#!/usr/bin/env python3
"""MCP Apps' way back and Open Generative UI's stream, against a built binary as the local server.

usage: mcp_apps_bench.py BIN [OUT.json]      (part of scripts/bench.sh)

Starts aimock with the test fixtures (tests/fixtures/aimock-openai.json), the MCP App server of
tests/node/mcp-apps-server.mjs and BIN (the in-memory thread store) with that server listed as
`weather`, all on loopback. Then:
  1. one run that calls the UI tool, and on its thread, REQUESTS times each (sequential, one
     keep-alive connection): `GET /threads/{id}`, and a view's request as CopilotKit sends it (a
     run carrying forwardedProps.__proxiedMCPRequest: resources/read of the view, tools/call of
     the app-only tool) and as assistant-ui sends it (POST /threads/{id}/mcp-apps, tools/call);
     median and p90 of each, and what the MCP server itself takes for the same tools/call
     (its own session, straight from Node), so the function's share shows;
  2. one run of a generateSandboxedUi call written 12 characters at a time: the model's
     argument chunks (TOOL_CALL_ARGS) against the activity events the preview adds.
Every process started here is stopped on exit.
"""
import http.client, json, os, statistics, subprocess, sys, time, uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import free_port, start_server, stop  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = sys.argv[1]
OUT = sys.argv[2] if len(sys.argv) > 2 else None
REQUESTS = 200
NODE_DIR = os.path.join(ROOT, "tests/node")
ASK = "[mcp-apps] show the weather in Oslo"
SKETCH = "[ogui] sketch a card slowly"
SANDBOXED_UI = {"name": "generateSandboxedUi", "description": "Generate a sandboxed UI",
                "parameters": {"type": "object", "properties": {"html": {"type": "string"}}}}


def wait_http(port, path, proc, what):
    began = time.perf_counter()
    while time.perf_counter() - began < 30:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            conn.request("GET", path)
            if conn.getresponse().status < 500:
                return
        except OSError:
            pass
        if proc.poll() is not None:
            raise SystemExit(f"{what} exited early")
        time.sleep(0.05)
    raise SystemExit(f"{what} did not start")


def spawn(args, env, log_dir, name, cwd=ROOT):
    return subprocess.Popen(args, cwd=cwd, env=dict(os.environ, **env), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(log_dir, f"{name}.log"), "ab"),
                            start_new_session=True)


def run_body(thread, text, tools=(), props=None):
    return {"threadId": thread, "runId": str(uuid.uuid4()), "state": {}, "context": [],
            "messages": [{"id": "u1", "role": "user", "content": text}], "tools": list(tools),
            "forwardedProps": props or {}}


def post(conn, path, body, accept="text/event-stream"):
    data = json.dumps(body).encode()
    conn.request("POST", path, body=data, headers={"content-type": "application/json",
                                                    "accept": accept})
    response = conn.getresponse()
    text = response.read().decode()
    if response.status != 200:
        raise SystemExit(f"POST {path}: {response.status} {text[:300]}")
    return text


def events(sse):
    return [json.loads(line[6:]) for line in sse.split("\n") if line.startswith("data: ")]


def timed(label, conn, request, count=REQUESTS):
    """`request(conn)` `count` times after a warm-up: median and p90 in ms."""
    for _ in range(10):
        request(conn)
    samples = []
    for _ in range(count):
        began = time.perf_counter()
        request(conn)
        samples.append((time.perf_counter() - began) * 1000)
    samples.sort()
    figure = {"median_ms": round(statistics.median(samples), 3),
              "p90_ms": round(samples[int(len(samples) * 0.9)], 3), "requests": count}
    print(f"  {label:<58} median {figure['median_ms']:7.3f} ms   p90 {figure['p90_ms']:7.3f} ms")
    return figure


def mcp_server_alone(mcp_port, count=REQUESTS):
    """The same tools/call straight to the MCP server from Node (its own session): the part of
    the way back that is the server's."""
    script = f"""
import {{ Client }} from "@modelcontextprotocol/sdk/client/index.js";
import {{ StreamableHTTPClientTransport }} from "@modelcontextprotocol/sdk/client/streamableHttp.js";
const client = new Client({{ name: "bench", version: "1" }}, {{ capabilities: {{ extensions: {{
  "io.modelcontextprotocol/ui": {{ mimeTypes: ["text/html;profile=mcp-app"] }} }} }} }});
await client.connect(new StreamableHTTPClientTransport(new URL("http://127.0.0.1:{mcp_port}/mcp")));
const call = () => client.callTool({{ name: "refresh_weather", arguments: {{ city: "Oslo" }} }});
for (let i = 0; i < 10; i++) await call();
const samples = [];
for (let i = 0; i < {count}; i++) {{ const t = performance.now(); await call(); samples.push(performance.now() - t); }}
samples.sort((a, b) => a - b);
console.log(JSON.stringify({{ median_ms: samples[Math.floor(samples.length / 2)], p90_ms: samples[Math.floor(samples.length * 0.9)] }}));
await client.close();
"""
    out = subprocess.run(["node", "--input-type=module", "-e", script], cwd=NODE_DIR,
                         capture_output=True, text=True, check=True).stdout
    figure = {k: round(v, 3) for k, v in json.loads(out).items()}
    figure["requests"] = count
    print(f"  {'tools/call straight to the MCP server (Node SDK client)':<58} median "
          f"{figure['median_ms']:7.3f} ms   p90 {figure['p90_ms']:7.3f} ms")
    return figure


def main():
    log_dir = os.path.dirname(os.path.abspath(OUT)) if OUT else "/tmp"
    procs = []
    try:
        aimock_port, mcp_port = free_port(), free_port()
        procs.append(spawn([os.path.join(NODE_DIR, "node_modules/.bin/llmock"), "-p", str(aimock_port),
                            "-h", "127.0.0.1", "-f", "tests/fixtures/aimock-openai.json"], {},
                           log_dir, "mcp-apps-aimock"))
        wait_http(aimock_port, "/health", procs[-1], "aimock")
        procs.append(spawn(["node", "mcp-apps-server.mjs"], {"PORT": str(mcp_port)}, log_dir,
                           "mcp-apps-server", cwd=NODE_DIR))
        wait_http(mcp_port, "/health", procs[-1], "the MCP App server")
        servers = json.dumps([{"name": "weather", "url": f"http://127.0.0.1:{mcp_port}/mcp"}])
        server, port, _ = start_server(BIN, aimock_port, log_dir, {"MCP_SERVERS": servers})
        procs.append(server)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

        thread = str(uuid.uuid4())
        first = events(post(conn, "/agent", run_body(thread, ASK)))
        view = next(e for e in first if e["type"] == "ACTIVITY_SNAPSHOT")["content"]
        server_ref = {"serverHash": view["serverHash"], "serverId": view["serverId"]}

        def get_thread(c):
            c.request("GET", f"/threads/{thread}")
            response = c.getresponse()
            response.read()
            assert response.status == 200

        def proxied(method, params):
            props = {"__proxiedMCPRequest": dict(server_ref, method=method, params=params)}
            return lambda c: post(c, "/agent", run_body(thread, ASK, props=props))

        def route(c):
            post(c, f"/threads/{thread}/mcp-apps",
                 {"method": "tools/call",
                  "params": {"name": "refresh_weather", "arguments": {"city": "Oslo"},
                             "serverId": "weather"}}, accept="application/json")

        print(f"MCP Apps' way back, {REQUESTS} sequential requests each (in-memory store, loopback):")
        figures = {
            "get_thread": timed("GET /threads/{id}", conn, get_thread),
            "proxied_resources_read": timed("proxied run: resources/read of the view (3 KB)", conn,
                                            proxied("resources/read", {"uri": view["resourceUri"]})),
            "proxied_tools_call": timed("proxied run: tools/call of the app-only tool", conn,
                                        proxied("tools/call", {"name": "refresh_weather",
                                                               "arguments": {"city": "Oslo"}})),
            "route_tools_call": timed("POST /threads/{id}/mcp-apps: tools/call", conn, route),
            "mcp_server_alone": mcp_server_alone(mcp_port),
        }

        body = run_body(str(uuid.uuid4()), SKETCH, tools=[SANDBOXED_UI])
        began = time.perf_counter()
        streamed = events(post(conn, "/agent", body))
        took = time.perf_counter() - began
        kinds = [e["type"] for e in streamed]
        chunks = kinds.count("TOOL_CALL_ARGS")
        deltas = kinds.count("ACTIVITY_DELTA")
        snapshots = kinds.count("ACTIVITY_SNAPSHOT")
        ops = sum(len(e["patch"]) for e in streamed if e["type"] == "ACTIVITY_DELTA")
        added = sum(len(json.dumps(e)) for e in streamed if e["type"].startswith("ACTIVITY_"))
        args = sum(len(json.dumps(e)) for e in streamed if e["type"] == "TOOL_CALL_ARGS")
        figures["ogui"] = {"argument_chunks": chunks, "activity_deltas": deltas,
                           "activity_snapshots": snapshots, "patch_operations": ops,
                           "activity_bytes": added, "argument_bytes": args,
                           "run_seconds": round(took, 3)}
        print(f"Open Generative UI, one generateSandboxedUi call in {chunks} argument chunks "
              f"({took:.2f} s, the model's own pace):")
        print(f"  ACTIVITY_DELTA events: {deltas} ({deltas - 1} with the chunks' {ops - 1} operations, "
              f"1 ending generation), ACTIVITY_SNAPSHOT: {snapshots}")
        print(f"  activity events per argument chunk: {(deltas - 1) / chunks:.2f} (at most 1 by design)")
        print(f"  bytes: {added} of activity events beside {args} of TOOL_CALL_ARGS events")
        if OUT:
            with open(OUT, "w") as out:
                json.dump(figures, out, indent=2)
    finally:
        for proc in procs:
            stop(proc)


if __name__ == "__main__":
    main()
