#!/usr/bin/env python3
"""Whole runs against the release binary as a local server: cold start, TTFB, CPU per event, RSS.

usage: whole_runs.py BIN AIMOCK_PORT OUT.json [KEY=VALUE ...] [warm-only]
"""
import json, os, signal, socket, statistics, subprocess, sys, time

BIN, AIMOCK_PORT, OUT = sys.argv[1], int(sys.argv[2]), sys.argv[3]
# Further arguments: KEY=VALUE settings for the server (e.g. a DynamoDB table), and "warm-only"
# to skip the cold starts.
EXTRA_ENV = dict(arg.split("=", 1) for arg in sys.argv[4:] if "=" in arg)
WARM_ONLY = "warm-only" in sys.argv[4:]
COLD_STARTS = 0 if WARM_ONLY else 15  # fresh processes: start → ready, then the first run's TTFB
WARM_RUNS = 30        # short answers on a warm process
LONG_RUNS = 50        # 2,000-token runs for CPU per event
CLK_TCK = os.sysconf("SC_CLK_TCK")
BODY_LONG = "benchmark long answer"
BODY_SHORT = "benchmark short answer"

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close(); return port

def start_server():
    port = free_port()
    env = dict(os.environ, PORT=str(port), HOST="127.0.0.1",
               OPENAI_BASE_URL=f"http://127.0.0.1:{AIMOCK_PORT}/v1", OPENAI_API_KEY="bench-key",
               AGENT_MODEL="bench-model", MODEL_MAX_RETRIES="0", RUST_LOG="warn")
    env.pop("THREADS_TABLE", None)
    env.pop("AWS_LAMBDA_RUNTIME_API", None)
    env.update(EXTRA_ENV)
    began = time.perf_counter()
    proc = subprocess.Popen([BIN], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(os.path.dirname(OUT), "server.log"), "ab"),
                            start_new_session=True)
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(f"server exited with {proc.returncode}; see server.log")
            if time.perf_counter() - began > 10:
                raise SystemExit("server not ready after 10 s")
            time.sleep(0.0005)
    return proc, port, time.perf_counter() - began

def stop(proc):
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL); proc.wait()

def dechunk(raw):
    out, i = bytearray(), 0
    while True:
        j = raw.index(b"\r\n", i)
        size = int(raw[i:j].split(b";")[0], 16)
        if size == 0:
            return bytes(out)
        out += raw[j + 2:j + 2 + size]
        i = j + 2 + size + 2

run_counter = 0
def run(port, text):
    """One POST /agent on a fresh connection. Returns (ttfb, time to first TEXT_MESSAGE_CONTENT,
    total, events)."""
    global run_counter
    run_counter += 1
    body = json.dumps({"threadId": f"bench-{os.getpid()}-{run_counter}", "runId": f"run-{run_counter}",
                       "messages": [{"id": "m1", "role": "user", "content": text}],
                       "tools": [], "context": [], "forwardedProps": {}}).encode()
    request = (f"POST /agent HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
               f"Accept: text/event-stream\r\nConnection: close\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body
    began = time.perf_counter()
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(request)
    raw, ttfb, first_text = bytearray(), None, None
    while True:
        data = sock.recv(65536)
        if not data:
            break
        now = time.perf_counter()
        if ttfb is None:
            ttfb = now - began
        raw += data
        if first_text is None and b'"TEXT_MESSAGE_CONTENT"' in raw:
            first_text = now - began
    total = time.perf_counter() - began
    sock.close()
    head, _, payload = bytes(raw).partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        raise SystemExit(f"run failed: {head[:200]!r} {payload[:300]!r}")
    if b"transfer-encoding: chunked" in head.lower():
        payload = dechunk(payload)
    # Frames are `id: <seq>\ndata: <json>`; pings are comments.
    frames = [f.split(b"data: ", 1)[1] for f in payload.split(b"\n\n") if b"data: " in f]
    last = json.loads(frames[-1])
    if last["type"] != "RUN_FINISHED":
        raise SystemExit(f"run did not finish: {last}")
    return ttfb, first_text, total, len(frames)

def cpu_seconds(pid):
    """(utime, stime) in seconds: fields 14 and 15 of /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) / CLK_TCK, int(fields[12]) / CLK_TCK

def cpu_ns_schedstat(pid):
    """Sum of on-CPU ns of the live threads: finer than clock ticks."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total

def status_kb(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0

procs = []
try:
    figures = {}
    # Cold starts, each followed by that process's first run (cold model-connection pool).
    colds, first_ttfb, first_text = [], [], []
    for _ in range(COLD_STARTS):
        proc, port, ready = start_server(); procs.append(proc)
        ttfb, text, _, _ = run(port, BODY_SHORT)
        colds.append(ready); first_ttfb.append(ttfb); first_text.append(text)
        stop(proc); procs.remove(proc)
    if colds:
        figures["cold_start_ms"] = statistics.median(colds) * 1e3
        figures["cold_start_ms_min_max"] = [min(colds) * 1e3, max(colds) * 1e3]
        figures["first_run_ttfb_ms"] = statistics.median(first_ttfb) * 1e3
        figures["first_run_first_text_ms"] = statistics.median(first_text) * 1e3

    # One fresh process: RSS after start, after one 2,000-token run, then warm runs and CPU.
    proc, port, _ = start_server(); procs.append(proc)
    figures["rss_idle_kb"] = status_kb(proc.pid, "VmRSS")
    _, _, long_total, long_events = run(port, BODY_LONG)
    figures["peak_rss_one_long_run_kb"] = status_kb(proc.pid, "VmHWM")
    figures["long_run_events"] = long_events
    figures["long_run_wall_ms"] = long_total * 1e3
    for _ in range(3):
        run(port, BODY_SHORT)
    warm_ttfb, warm_text = [], []
    for _ in range(WARM_RUNS):
        ttfb, text, _, _ = run(port, BODY_SHORT)
        warm_ttfb.append(ttfb); warm_text.append(text)
    figures["warm_runs"] = WARM_RUNS
    figures["warm_run_ttfb_ms"] = statistics.median(warm_ttfb) * 1e3
    figures["warm_run_first_text_ms"] = statistics.median(warm_text) * 1e3

    cpu0, ns0, events, walls = cpu_seconds(proc.pid), cpu_ns_schedstat(proc.pid), 0, []
    for _ in range(LONG_RUNS):
        _, _, total, n = run(port, BODY_LONG)
        events += n; walls.append(total)
    cpu1, ns1 = cpu_seconds(proc.pid), cpu_ns_schedstat(proc.pid)
    figures["long_runs"] = LONG_RUNS
    figures["long_runs_events"] = events
    figures["cpu_per_event_us"] = (sum(cpu1) - sum(cpu0)) / events * 1e6
    figures["user_per_event_us"] = (cpu1[0] - cpu0[0]) / events * 1e6
    figures["sys_per_event_us"] = (cpu1[1] - cpu0[1]) / events * 1e6
    figures["cpu_per_event_us_schedstat"] = (ns1 - ns0) / events / 1e3
    figures["cpu_tick_ms"] = 1e3 / CLK_TCK
    figures["long_run_wall_ms_median"] = statistics.median(walls) * 1e3
    figures["peak_rss_after_all_runs_kb"] = status_kb(proc.pid, "VmHWM")
    figures["threads"] = status_kb(proc.pid, "Threads")
    stop(proc); procs.remove(proc)
    with open(OUT, "w") as f:
        json.dump(figures, f, indent=2)
finally:
    for proc in procs:
        stop(proc)
