#!/usr/bin/env python3
"""Cold start with MCP servers configured: the release binary as the local server, from process
start until its port accepts connections (it binds only after the MCP servers were listed).

usage: mcp_bench.py BIN [OUT.json]      (part of scripts/bench.sh)

Starts two @modelcontextprotocol/server-everything servers (streamable HTTP, from tests/node) on
loopback, then measures cold starts with no MCP server, one, two (listed concurrently), two of
which one is down (connection refused), and two of which one accepts connections but never
answers (bounded by MCP_CONNECT_TIMEOUT_MS). Every process started here is stopped on exit.
"""
import json, os, signal, socket, statistics, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import free_port, start_server, stop  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = sys.argv[1]
OUT = sys.argv[2] if len(sys.argv) > 2 else None
COLD_STARTS = 15
SILENT_TIMEOUT_MS = 1000
EVERYTHING = os.path.join(ROOT, "tests/node/node_modules/.bin/mcp-server-everything")


def start_everything(log_dir):
    """server-everything on a free port; returns (process, url) once it answers."""
    port = free_port()
    proc = subprocess.Popen([EVERYTHING, "streamableHttp"], env=dict(os.environ, PORT=str(port)),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(log_dir, f"everything-{port}.log"), "ab"),
                            start_new_session=True)
    began = time.perf_counter()
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            if proc.poll() is not None or time.perf_counter() - began > 30:
                raise SystemExit("server-everything did not start; see its log")
            time.sleep(0.05)


def main():
    if not os.path.exists(EVERYTHING):
        raise SystemExit("server-everything is missing: bash scripts/install-test-tools.sh")
    log_dir = os.path.dirname(os.path.abspath(OUT)) if OUT else "/tmp"
    procs = []
    # A port that accepts connections and never answers: the kernel completes the handshake
    # for the listen backlog, nobody reads.
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)
    silent_url = f"http://127.0.0.1:{silent.getsockname()[1]}/mcp"
    try:
        a, url_a = start_everything(log_dir); procs.append(a)
        b, url_b = start_everything(log_dir); procs.append(b)
        down_url = f"http://127.0.0.1:{free_port()}/mcp"
        cases = [
            ("no MCP server", []),
            ("one MCP server", [("a", url_a)]),
            ("two MCP servers (listed concurrently)", [("a", url_a), ("b", url_b)]),
            ("two, one of them down (connection refused)", [("a", url_a), ("down", down_url)]),
            (f"two, one of them silent (MCP_CONNECT_TIMEOUT_MS={SILENT_TIMEOUT_MS})",
             [("a", url_a), ("silent", silent_url)]),
        ]
        figures = {}
        for label, servers in cases:
            env = {"MCP_CONNECT_TIMEOUT_MS": str(SILENT_TIMEOUT_MS), "RUNTIME_FLAVOR": "current-thread"}
            if servers:
                env["MCP_SERVERS"] = json.dumps([{"name": n, "url": u} for n, u in servers])
            times = []
            for _ in range(COLD_STARTS):
                proc, port, ready = start_server(BIN, 9, log_dir, env)
                times.append(ready * 1e3)
                if servers:
                    caps = json.loads(
                        subprocess.run(["curl", "-s", f"http://127.0.0.1:{port}/capabilities"],
                                       capture_output=True, check=True).stdout)
                    offered = {t["name"].split("__")[0] for t in caps["tools"]["items"] if "__" in t["name"]}
                    expected = {n for n, _ in servers if n in ("a", "b")}
                    if offered != expected:
                        raise SystemExit(f"{label}: offered tools of {offered}, expected {expected}")
                stop(proc)
            figures[label] = {"median_ms": statistics.median(times), "min_ms": min(times), "max_ms": max(times)}
        width = max(len(label) for label in figures)
        print(f"{'cold start, process start → port answers':<{width}} | median | min | max")
        for label, f in figures.items():
            print(f"{label:<{width}} | {f['median_ms']:.1f} ms | {f['min_ms']:.1f} ms | {f['max_ms']:.1f} ms")
        if OUT:
            with open(OUT, "w") as out:
                json.dump(figures, out, indent=2)
    finally:
        for proc in procs:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            proc.wait(timeout=5)
        silent.close()


main()
