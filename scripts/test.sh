#!/usr/bin/env bash
# Runs every check and test of agui-lambda; safe to run again. The README's test command.
#   1. checks the prerequisites (scripts/prerequisites.sh: installs them with apt-get as root,
#      otherwise names what is missing) and installs the test tools (.venv from PyPI,
#      tests/node from npm)
#   2. cargo fmt --check, cargo clippy --all-targets -D warnings
#   3. one build: the test targets, then the binaries on the same compiled dependencies (fails
#      when a dependency compiles twice)
#   4. end to end: the function under `cargo lambda watch`, aimock as its model, driven by
#      @ag-ui/client 1.0.0 and 0.0.59, its traces flushed to an OTLP receiver and its EMF records
#      checked against the EMF schema; then the local server: run lifecycle, 600-turn threads
#      (both clients resending everything, the resumable client sending only what is new), AG-UI 1.0
#      approvals (interrupts and the 0.0.59 confirm-tool fallback) and capabilities, sub-agents
#      (a coordinator, a researcher, a factchecker, a second agui-lambda process and aimock's AG-UI
#      mock as remote children; 1.0.0, 0.0.59, and 0.0.58 for `inline`), and the
#      example agent's own binary (examples/calculator) calling its tool; an API Gateway REST
#      event through `cargo lambda invoke`; AgentCore Runtime mode with @ag-ui/client 1.0.0 through
#      /invocations, then its SIGTERM; streams cut by STREAM_MAX_SECS through both clients;
#      CopilotKit's own client (@copilotkit/core 1.75.0 and 1.70.0) with the function as its
#      runtime (/copilotkit), under cargo lambda watch and on the local server; the
#      AG-UI 1.1 conformance suite (scripts/agui_conformance.py) driving the servers, then over
#      every captured stream, with docs/conformance.md as it generates it; every captured
#      stream checked by ag-ui-validate
#      then the browser tests: Playwright driving Debian's chromium through the dev page (also
#      across streams cut short by STREAM_MAX_SECS), the CopilotKit example (a static page on
#      its own origin whose runtime is the function) and the assistant-ui
#      sub-agents example (screenshots in
#      .ci/artifacts/screenshots)
#   5. the links and anchors of README.md, CHANGELOG.md and docs/*.md (scripts/check_links.py);
#      the README's and docs/' examples, as written, against the local server with the demo model: the
#      curl commands (and their sample output), the TypeScript example under `tsc --strict`
#   6. the SAM template, transformed offline, linted by cfn-lint
#   7. cargo deny (licenses, bans, sources; advisories when a database is at hand)
#   8. the benches, once each as a smoke test
#   9. the rustdoc examples (cargo test --doc), cargo test without Node on PATH (all but the
#      wire tests: the OpenAI wire format, and the MCP tests against
#      @modelcontextprotocol/server-everything), then the wire tests with Node (cargo test --
#      wire_): every test runs once, in one of the two. Runs that outlast an invocation run in
#      both: the Lambda emulator of tests/api/lambda_emulator.rs (no Node), and with Node the
#      40-step run that the resumable client and @ag-ui/client 1.0.0 follow
#  10. the summary: each step's duration (also in .ci/artifacts/timings.txt), then one line that
#      sums every suite's tests (each suite's output is in .ci/artifacts/suites/): `N passed, M failed`
# Not part of it, because they need a release or sanitizer build (.ci/run runs them after this
# script): `bash scripts/sam_build.sh` (sam build for x86_64), `bash scripts/build_image.sh` (the
# OCI image of that release binary, served from its root filesystem) and `bash scripts/fuzz.sh`.
# Logs and captured streams land in .ci/artifacts/.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
ARTIFACTS="$ROOT/.ci/artifacts"
rm -rf "$ARTIFACTS"
mkdir -p "$ARTIFACTS/captures"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

started=$SECONDS
step_started=$SECONDS
step_name=""
TIMINGS=()
step() {
  if [[ -n "$step_name" ]]; then TIMINGS+=("$(printf '%5d s  %s' $((SECONDS - step_started)) "$step_name")"); fi
  step_name="$*"
  step_started=$SECONDS
  printf '\n==> %s   [%d s]\n' "$*" $((SECONDS - started))
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_for() { # url, what, pid
  for _ in $(seq 1 600); do
    if curl -fs -o /dev/null "$1"; then return 0; fi
    if ! kill -0 "$3" 2>/dev/null; then echo "$2 exited early" >&2; return 1; fi
    sleep 0.2
  done
  echo "$2 did not become ready at $1" >&2
  return 1
}
# The function is ready when it answers itself: a thread that does not exist is its own 404.
wait_for_function() { # base url, what, pid
  for _ in $(seq 1 600); do
    if curl -s "$1/threads/ready-check" | grep -q '"thread_not_found"'; then return 0; fi
    if ! kill -0 "$3" 2>/dev/null; then echo "$2 exited early" >&2; return 1; fi
    sleep 0.2
  done
  echo "$2 did not serve the function at $1" >&2
  return 1
}

# Every suite's output goes to .ci/artifacts/suites/NAME.log as well (each `| tee` below), where
# the closing summary counts its passes and failures.
SUITES="$ARTIFACTS/suites"
mkdir -p "$SUITES"

PIDS=()
cleanup() {
  for pid in "${PIDS[@]:-}"; do
    [ -n "$pid" ] && kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true
  done
}
trap cleanup EXIT

step "prerequisites"
bash scripts/prerequisites.sh test
export AGUI_PREREQUISITES_CHECKED=1

step "installing test tools"
bash scripts/install-test-tools.sh
export PATH="$ROOT/.venv/bin:$PATH"

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy --all-targets -- -D warnings"
cargo clippy --all-targets --locked -- -D warnings

step "one build: the tests, then the binaries on the same compiled dependencies"
# The test targets first (their dev-dependencies' features are named in Cargo.toml's
# [dependencies] too), then the binaries as `cargo run` and `cargo lambda watch` build them:
# nothing but this crate may compile again.
cargo test --locked --no-run --all-targets
cargo build --locked -v --bin agui-lambda 2>&1 | tee "$ARTIFACTS/build.log" | grep -E '^\s+(Compiling|Finished)'
if grep -E '^\s+Compiling ' "$ARTIFACTS/build.log" | grep -v ' agui-lambda v'; then
  echo "these dependencies compiled a second time: a dev-dependency adds features the plain build lacks (see Cargo.toml)"
  exit 1
fi
# The library's public API is documented (#![warn(missing_docs)] in src/lib.rs, which holds in
# this build: the test build's `test-utils` exposes internals that are not part of the API).
if grep -A4 'missing documentation' "$ARTIFACTS/build.log"; then
  echo "undocumented public items in the library (see above)"
  exit 1
fi
# The example agent's binary (an example may use dev-dependencies: the test build's graph), and
# the strict stand-in of Anthropic's Messages API the Node suites use (tests/api/strict_messages.rs).
cargo build --locked --example calculator --example strict_messages

step "end to end under cargo lambda watch with @ag-ui/client 1.0.0 and 0.0.59"
AIMOCK_PORT=$(free_port)
setsid tests/node/node_modules/.bin/llmock -p "$AIMOCK_PORT" -h 127.0.0.1 -f tests/fixtures/aimock-openai.json -f tests/fixtures/aimock-a2ui.json \
  </dev/null >"$ARTIFACTS/aimock.log" 2>&1 &
PIDS+=($!)
wait_for "http://127.0.0.1:$AIMOCK_PORT/health" aimock "${PIDS[-1]}"
# Traces go to a real OTLP receiver; the batch processor never exports by itself here (a ten-minute
# delay, a batch as large as its queue), so every span that arrives was flushed by its invocation.
OTLP_PORT=$(free_port)
setsid python tests/otlp_receiver.py --port "$OTLP_PORT" </dev/null >"$ARTIFACTS/otlp-receiver.log" 2>&1 &
PIDS+=($!)
wait_for "http://127.0.0.1:$OTLP_PORT/health" "the OTLP receiver" "${PIDS[-1]}"
WATCH_PORT=$(free_port)
# As a newcomer runs it: no AWS account, no AWS variable at all (the detached run below invokes
# the function through cargo-lambda's own Invoke API, which the function finds by itself).
setsid env -u AWS_REGION -u AWS_DEFAULT_REGION -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY \
  -u AWS_SESSION_TOKEN -u AWS_PROFILE -u AWS_EC2_METADATA_DISABLED -u AWS_ENDPOINT_URL -u AWS_ENDPOINT_URL_LAMBDA \
  cargo lambda watch --ignore-changes -A 127.0.0.1 -P "$WATCH_PORT" \
  --env-var "OPENAI_BASE_URL=http://127.0.0.1:$AIMOCK_PORT/v1,OPENAI_API_KEY=e2e-test-key,AGENT_MODEL=test-model,MODEL_MAX_RETRIES=1,RUST_LOG=info,OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$OTLP_PORT,OTEL_BSP_SCHEDULE_DELAY=600000,OTEL_BSP_MAX_QUEUE_SIZE=8192,OTEL_BSP_MAX_EXPORT_BATCH_SIZE=8192,EMF_METRICS=true" \
  </dev/null >"$ARTIFACTS/watch.log" 2>&1 &
PIDS+=($!)
WATCH_URL="http://127.0.0.1:$WATCH_PORT/lambda-url/agui-lambda"
# Ready when the function itself answers (cargo-lambda's own 404 has no error code of ours).
ready=""
for _ in $(seq 1 600); do
  if curl -s "$WATCH_URL/threads/ready-check" | grep -q '"thread_not_found"'; then ready=1; break; fi
  sleep 0.2
done
[ -n "$ready" ] || { echo "cargo lambda watch did not serve the function"; cat "$ARTIFACTS/watch.log"; exit 1; }
# cargo lambda watch serves one request at a time: the double-texting tests run in the next step.
(cd tests/node && E2E_SEQUENTIAL=1 AGUI_URL="$WATCH_URL/agent" CAPTURE_DIR="$ARTIFACTS/captures" node --test --test-concurrency=1 e2e.test.mjs) 2>&1 | tee "$SUITES/e2e-watch.log" \
  || { echo "--- cargo lambda watch log"; tail -n 50 "$ARTIFACTS/watch.log"; exit 1; }
# CopilotKit's own client (@copilotkit/core 1.75.0 and 1.70.0) with the function as its runtime
# (/copilotkit): one request at a time here, so Stop and joining run against the local server.
(cd tests/node && COPILOTKIT_BASE="$WATCH_URL" COPILOTKIT_SERIAL=1 CAPTURE_DIR="$ARTIFACTS/captures" node --test --test-concurrency=1 copilotkit.test.mjs) 2>&1 | tee "$SUITES/copilotkit-watch.log" \
  || { echo "--- cargo lambda watch log"; tail -n 50 "$ARTIFACTS/watch.log"; exit 1; }
# The v1 agent API's detached run, started and followed to its end: the function invokes itself
# through the emulator's Invoke API, with no AWS variable set.
(cd tests/node && AGUI_BASE="$WATCH_URL" CAPTURE_DIR="$ARTIFACTS/captures" node --test v1-agent.test.mjs) 2>&1 | tee "$SUITES/v1-agent-watch.log" \
  || { echo "--- cargo lambda watch log"; tail -n 50 "$ARTIFACTS/watch.log"; exit 1; }
# An API Gateway REST (1.0 proxy) event through `cargo lambda invoke`: the same function streams
# it (the stream lands with the captures, so ag-ui-validate checks it below).
cargo lambda invoke --invoke-address 127.0.0.1 --invoke-port "$WATCH_PORT" agui-lambda \
  --data-file events/rest-plain-chat.json >"$ARTIFACTS/captures/rest-plain-chat.sse" 2>"$ARTIFACTS/rest-invoke.log" \
  || { cat "$ARTIFACTS/rest-invoke.log"; echo "cargo lambda invoke of a REST event failed"; exit 1; }
python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["body"])' events/rest-plain-chat.json \
  >"$ARTIFACTS/captures/rest-plain-chat.input.json"
tail -n 3 "$ARTIFACTS/captures/rest-plain-chat.sse" | grep -q '"type":"RUN_FINISHED","threadId":"9b2e4c1a-6f3d-4e8b-a1c7-2d5f8e9a0b13"' \
  || { tail -n 5 "$ARTIFACTS/captures/rest-plain-chat.sse"; echo "the REST event's run did not finish"; exit 1; }
echo "rest-invoke: 1 passed, 0 failed" | tee "$SUITES/rest-invoke.log"
curl -fs "http://127.0.0.1:$OTLP_PORT/spans" >"$ARTIFACTS/watch-spans.json"
python tests/check_lambda_traces.py "http://127.0.0.1:$OTLP_PORT" \
  || { echo "--- cargo lambda watch log"; tail -n 50 "$ARTIFACTS/watch.log"; exit 1; }
# One EMF record per run in the function's output, each valid against the EMF specification.
python tests/check_emf.py "$ARTIFACTS/watch.log"

step "the local server: limits, 600-turn threads, disconnects, double-texting, AG-UI 1.0 approvals, the resumable client"
LOCAL_PORT=$(free_port)
PORT="$LOCAL_PORT" OPENAI_BASE_URL="http://127.0.0.1:$AIMOCK_PORT/v1" OPENAI_API_KEY=e2e-test-key AGENT_MODEL=test-model \
  MODEL_MAX_RETRIES=1 RUST_LOG=info setsid target/debug/agui-lambda </dev/null >"$ARTIFACTS/local.log" 2>&1 &
PIDS+=($!)
wait_for_function "http://127.0.0.1:$LOCAL_PORT" "the local server" "${PIDS[-1]}"
(cd tests/node && AGUI_URL="http://127.0.0.1:$LOCAL_PORT/agent" CAPTURE_DIR="$ARTIFACTS/captures" \
  node --test --test-concurrency=1 --test-name-pattern "limits|lifecycle" e2e.test.mjs) 2>&1 | tee "$SUITES/e2e-local.log" \
  || { echo "--- local server log"; tail -n 50 "$ARTIFACTS/local.log"; exit 1; }
# Streams that end before their run (STREAM_MAX_SECS=1; aimock's "[cut] …" answers last about two
# seconds): both real clients resolve on the notice, then the run is followed to its end.
CUT_PORT=$(free_port)
PORT="$CUT_PORT" STREAM_MAX_SECS=1 OPENAI_BASE_URL="http://127.0.0.1:$AIMOCK_PORT/v1" OPENAI_API_KEY=e2e-test-key AGENT_MODEL=test-model \
  MODEL_MAX_RETRIES=1 RUST_LOG=info setsid target/debug/agui-lambda </dev/null >"$ARTIFACTS/cut.log" 2>&1 &
PIDS+=($!)
wait_for_function "http://127.0.0.1:$CUT_PORT" "the local server (STREAM_MAX_SECS=1 on aimock)" "${PIDS[-1]}"
(cd tests/node && AGUI_CUT_BASE="http://127.0.0.1:$CUT_PORT" CAPTURE_DIR="$ARTIFACTS/captures" node --test cut-streams.test.mjs) 2>&1 | tee "$SUITES/cut-streams.log" \
  || { echo "--- local server log"; tail -n 50 "$ARTIFACTS/cut.log"; exit 1; }
# A conversation that outgrows the request: HttpAgent 1.0.0 and 0.0.59 resend the whole thread
# for 600 turns of 1,500 characters (the last request about 1.9 MB; aimock's "[long-thread]").
(cd tests/node && AGUI_BASE="http://127.0.0.1:$LOCAL_PORT" node --test long-thread.test.mjs) 2>&1 | tee "$SUITES/long-thread.log" \
  || { echo "--- local server log"; tail -n 50 "$ARTIFACTS/local.log"; exit 1; }
# The same detached run on the local server: a background task.
(cd tests/node && AGUI_BASE="http://127.0.0.1:$LOCAL_PORT" node --test v1-agent.test.mjs) 2>&1 | tee "$SUITES/v1-agent-local.log" \
  || { echo "--- local server log"; tail -n 50 "$ARTIFACTS/local.log"; exit 1; }
# AG-UI 1.0 with both real clients: approvals as interrupts (1.0.0) and as the confirm tool
# (0.0.59), usage, capabilities. A server whose get_current_time needs approval.
APPROVAL_PORT=$(free_port)
PORT="$APPROVAL_PORT" OPENAI_BASE_URL="http://127.0.0.1:$AIMOCK_PORT/v1" OPENAI_API_KEY=e2e-test-key AGENT_MODEL=test-model \
  APPROVAL_REQUIRED_TOOLS=get_current_time CORS_ALLOWED_ORIGINS='*' MODEL_MAX_RETRIES=1 RUST_LOG=info setsid target/debug/agui-lambda \
  </dev/null >"$ARTIFACTS/approval.log" 2>&1 &
PIDS+=($!)
wait_for_function "http://127.0.0.1:$APPROVAL_PORT" "the local server (approvals)" "${PIDS[-1]}"
(cd tests/node && AGUI_BASE="http://127.0.0.1:$APPROVAL_PORT" CAPTURE_DIR="$ARTIFACTS/captures" node --test agui10.test.mjs) 2>&1 | tee "$SUITES/agui10.log" \
  || { echo "--- local server log"; tail -n 50 "$ARTIFACTS/approval.log"; exit 1; }
# CopilotKit's own client on the same server, with Stop and a second client joining a run.
(cd tests/node && COPILOTKIT_BASE="http://127.0.0.1:$APPROVAL_PORT" CAPTURE_DIR="$ARTIFACTS/captures" node --test --test-concurrency=1 copilotkit.test.mjs) 2>&1 | tee "$SUITES/copilotkit-local.log" \
  || { echo "--- local server log"; tail -n 50 "$ARTIFACTS/approval.log"; exit 1; }
# A2A 1.0 on the same server, driven by both official SDKs over JSON-RPC and HTTP+JSON: the
# approval is the input-required round trip.
(cd tests/node && A2A_BASE="http://127.0.0.1:$APPROVAL_PORT" node --test a2a.test.mjs) 2>&1 | tee "$SUITES/a2a-js.log" \
  || { echo "--- local server log"; tail -n 50 "$ARTIFACTS/approval.log"; exit 1; }
python tests/python/a2a_server_check.py "http://127.0.0.1:$APPROVAL_PORT" 2>&1 | tee "$SUITES/a2a-python.log" \
  || { echo "--- local server log"; tail -n 50 "$ARTIFACTS/approval.log"; exit 1; }
# A conversation that outgrows a 1,000-token window, through both real clients: compaction
# streamed as ACTIVITY_SNAPSHOT (the captures go to ag-ui-validate below).
COMPACT_PORT=$(free_port)
PORT="$COMPACT_PORT" OPENAI_BASE_URL="http://127.0.0.1:$AIMOCK_PORT/v1" OPENAI_API_KEY=e2e-test-key AGENT_MODEL=test-model \
  MODEL_CONTEXT_TOKENS=1000 MAX_OUTPUT_TOKENS=100 MODEL_MAX_RETRIES=1 RUST_LOG=info setsid target/debug/agui-lambda \
  </dev/null >"$ARTIFACTS/compaction.log" 2>&1 &
PIDS+=($!)
wait_for_function "http://127.0.0.1:$COMPACT_PORT" "the local server (a 1,000-token window)" "${PIDS[-1]}"
(cd tests/node && AGUI_BASE="http://127.0.0.1:$COMPACT_PORT" CAPTURE_DIR="$ARTIFACTS/captures" node --test compaction.test.mjs) 2>&1 | tee "$SUITES/compaction.log" \
  || { echo "--- local server log"; tail -n 50 "$ARTIFACTS/compaction.log"; exit 1; }
# A2UI surfaces through both real clients: a server that paints for every client
# (A2UI=assistant-ui) and the local server above (A2UI left to `auto`).
A2UI_PORT=$(free_port)
PORT="$A2UI_PORT" OPENAI_BASE_URL="http://127.0.0.1:$AIMOCK_PORT/v1" OPENAI_API_KEY=e2e-test-key AGENT_MODEL=test-model \
  A2UI=assistant-ui MODEL_MAX_RETRIES=1 RUST_LOG=info setsid target/debug/agui-lambda </dev/null >"$ARTIFACTS/a2ui.log" 2>&1 &
PIDS+=($!)
wait_for_function "http://127.0.0.1:$A2UI_PORT" "the local server (A2UI=assistant-ui)" "${PIDS[-1]}"
(cd tests/node && AGUI_A2UI_BASE="http://127.0.0.1:$A2UI_PORT" AGUI_PLAIN_BASE="http://127.0.0.1:$LOCAL_PORT" \
  CAPTURE_DIR="$ARTIFACTS/captures" node --test a2ui.test.mjs) 2>&1 | tee "$SUITES/a2ui.log" \
  || { echo "--- A2UI server log"; tail -n 50 "$ARTIFACTS/a2ui.log"; exit 1; }
# MCP Apps and Open Generative UI through both real clients: a real MCP server with a view
# (tests/node/mcp-apps-server.mjs, the official SDK) listed as `weather`, and CopilotKit's
# Open Generative UI flag on. The browser step below paints the same server's views (assistant-ui,
# and the CopilotKit page from its own origin: CORS) and CopilotKit's Open Generative UI sandbox.
MCP_APP_PORT=$(free_port)
PORT="$MCP_APP_PORT" setsid node tests/node/mcp-apps-server.mjs </dev/null >"$ARTIFACTS/mcp-apps-server.log" 2>&1 &
PIDS+=($!)
wait_for "http://127.0.0.1:$MCP_APP_PORT/health" "the MCP App server" "${PIDS[-1]}"
MCP_APPS_PORT=$(free_port)
PORT="$MCP_APPS_PORT" OPENAI_BASE_URL="http://127.0.0.1:$AIMOCK_PORT/v1" OPENAI_API_KEY=e2e-test-key AGENT_MODEL=test-model \
  MCP_SERVERS="[{\"name\":\"weather\",\"url\":\"http://127.0.0.1:$MCP_APP_PORT/mcp\"}]" OPEN_GENERATIVE_UI=true CORS_ALLOWED_ORIGINS='*' \
  MODEL_MAX_RETRIES=1 RUST_LOG=info setsid target/debug/agui-lambda </dev/null >"$ARTIFACTS/mcp-apps.log" 2>&1 &
PIDS+=($!)
wait_for_function "http://127.0.0.1:$MCP_APPS_PORT" "the local server (MCP Apps)" "${PIDS[-1]}"
(cd tests/node && AGUI_BASE="http://127.0.0.1:$MCP_APPS_PORT" CAPTURE_DIR="$ARTIFACTS/captures" node --test mcp-apps.test.mjs) 2>&1 | tee "$SUITES/mcp-apps.log" \
  || { echo "--- local server log"; tail -n 50 "$ARTIFACTS/mcp-apps.log"; exit 1; }
# The example agent's own binary (examples/calculator): its `calculate` tool, called by aimock.
EXAMPLE_PORT=$(free_port)
PORT="$EXAMPLE_PORT" OPENAI_BASE_URL="http://127.0.0.1:$AIMOCK_PORT/v1" OPENAI_API_KEY=e2e-test-key AGENT_MODEL=test-model \
  MODEL_MAX_RETRIES=1 RUST_LOG=info setsid target/debug/examples/calculator </dev/null >"$ARTIFACTS/example.log" 2>&1 &
PIDS+=($!)
wait_for_function "http://127.0.0.1:$EXAMPLE_PORT" "the example agent (examples/calculator)" "${PIDS[-1]}"
(cd tests/node && AGUI_BASE="http://127.0.0.1:$EXAMPLE_PORT" AIMOCK_URL="http://127.0.0.1:$AIMOCK_PORT" \
  CAPTURE_DIR="$ARTIFACTS/captures" node --test example.test.mjs) 2>&1 | tee "$SUITES/example.log" \
  || { echo "--- example agent log"; tail -n 50 "$ARTIFACTS/example.log"; exit 1; }
# Each model provider's reasoning and tool streams through both real clients: the OpenAI
# Responses API and Gemini's OpenAI-compatible endpoint, on the strict stand-ins of
# tests/strict_models.py (which refuse a reasoning item or thought signature not sent back as
# given), and Anthropic's Messages API on its strict stand-in (tests/api/strict_messages.rs, which
# refuses a thinking block altered or missing from its tool loop).
STRICT_PORT=$(free_port)
setsid python3 tests/strict_models.py --port "$STRICT_PORT" </dev/null >"$ARTIFACTS/strict-models.log" 2>&1 &
PIDS+=($!)
wait_for "http://127.0.0.1:$STRICT_PORT/health" "the strict model stand-ins" "${PIDS[-1]}"
RESPONSES_PORT=$(free_port)
PORT="$RESPONSES_PORT" OPENAI_BASE_URL="http://127.0.0.1:$STRICT_PORT/v1" OPENAI_API_KEY=e2e-test-key OPENAI_API=responses \
  AGENT_MODEL=gpt-5-mini REASONING_EFFORT=low RUST_LOG=info setsid target/debug/agui-lambda </dev/null >"$ARTIFACTS/responses.log" 2>&1 &
PIDS+=($!)
wait_for_function "http://127.0.0.1:$RESPONSES_PORT" "the local server (OpenAI Responses)" "${PIDS[-1]}"
GEMINI_PORT=$(free_port)
PORT="$GEMINI_PORT" MODEL_PROVIDER=gemini GEMINI_BASE_URL="http://127.0.0.1:$STRICT_PORT/v1beta/openai" GEMINI_API_KEY=e2e-test-key \
  AGENT_MODEL=gemini-3-flash-preview RUST_LOG=info setsid target/debug/agui-lambda </dev/null >"$ARTIFACTS/gemini.log" 2>&1 &
PIDS+=($!)
wait_for_function "http://127.0.0.1:$GEMINI_PORT" "the local server (Gemini)" "${PIDS[-1]}"
STRICT_MESSAGES_PORT=$(free_port)
setsid target/debug/examples/strict_messages --port "$STRICT_MESSAGES_PORT" --key e2e-test-key \
  </dev/null >"$ARTIFACTS/strict-messages.log" 2>&1 &
PIDS+=($!)
wait_for "http://127.0.0.1:$STRICT_MESSAGES_PORT/health" "the strict Messages API stand-in" "${PIDS[-1]}"
ANTHROPIC_PORT=$(free_port)
PORT="$ANTHROPIC_PORT" MODEL_PROVIDER=anthropic ANTHROPIC_BASE_URL="http://127.0.0.1:$STRICT_MESSAGES_PORT" \
  ANTHROPIC_API_KEY=e2e-test-key AGENT_MODEL=claude-sonnet-4-5 ANTHROPIC_THINKING_BUDGET_TOKENS=1024 RUST_LOG=info \
  setsid target/debug/agui-lambda </dev/null >"$ARTIFACTS/anthropic.log" 2>&1 &
PIDS+=($!)
wait_for_function "http://127.0.0.1:$ANTHROPIC_PORT" "the local server (Anthropic)" "${PIDS[-1]}"
(cd tests/node && AGUI_PROVIDER_BASES="responses=http://127.0.0.1:$RESPONSES_PORT,gemini=http://127.0.0.1:$GEMINI_PORT,anthropic=http://127.0.0.1:$ANTHROPIC_PORT" \
  CAPTURE_DIR="$ARTIFACTS/captures" node --test providers.test.mjs) 2>&1 | tee "$SUITES/providers.log" \
  || { echo "--- provider servers' logs"; tail -n 30 "$ARTIFACTS/responses.log" "$ARTIFACTS/gemini.log" "$ARTIFACTS/anthropic.log" "$ARTIFACTS/strict-models.log"; exit 1; }
# The resumable client's own tests: against the demo model, which streams slowly enough to cut.
DEMO_PORT=$(free_port)
PORT="$DEMO_PORT" RUST_LOG=info setsid target/debug/agui-lambda </dev/null >"$ARTIFACTS/demo.log" 2>&1 &
PIDS+=($!)
wait_for_function "http://127.0.0.1:$DEMO_PORT" "the local server (demo model)" "${PIDS[-1]}"
# Its 600 sent-only-new turns run on the aimock server (AGUI_FAST_BASE), which answers at once.
(cd clients/resumable-agent && AGUI_BASE="http://127.0.0.1:$DEMO_PORT" AGUI_FAST_BASE="http://127.0.0.1:$LOCAL_PORT" AGUI_LIVE_REQUIRED=1 npm test --silent) 2>&1 | tee "$SUITES/resumable-agent.log" \
  || { echo "--- local server log"; tail -n 50 "$ARTIFACTS/demo.log"; exit 1; }

# AgentCore Runtime mode (HOSTING=agentcore, demo model): /ping, and @ag-ui/client 1.0.0 through
# POST /invocations with the session header; then SIGTERM, which must stop it cleanly (exit 0).
AGENTCORE_PORT=$(free_port)
HOSTING=agentcore PORT="$AGENTCORE_PORT" RUST_LOG=info setsid target/debug/agui-lambda </dev/null >"$ARTIFACTS/agentcore.log" 2>&1 &
AGENTCORE_PID=$!
PIDS+=("$AGENTCORE_PID")
wait_for "http://127.0.0.1:$AGENTCORE_PORT/ping" "the local server (AgentCore mode)" "$AGENTCORE_PID"
(cd tests/node && AGUI_BASE="http://127.0.0.1:$AGENTCORE_PORT" CAPTURE_DIR="$ARTIFACTS/captures" node --test agentcore.test.mjs) 2>&1 | tee "$SUITES/agentcore.log" \
  || { echo "--- AgentCore-mode server log"; tail -n 50 "$ARTIFACTS/agentcore.log"; exit 1; }
kill -TERM "$AGENTCORE_PID"
if wait "$AGENTCORE_PID"; then echo "agentcore-sigterm: 1 passed, 0 failed" | tee "$SUITES/agentcore-sigterm.log"
else echo "the AgentCore-mode server did not exit 0 on SIGTERM"; tail -n 20 "$ARTIFACTS/agentcore.log"; exit 1; fi

step "sub-agents: a coordinator with a researcher, a factchecker, another agui-lambda and aimock's AG-UI mock"
# One aimock serves the model (the same fixtures) and the AG-UI mock agent (/agui); a second
# agui-lambda process is the remote AG-UI child; the coordinator runs on two servers, one showing
# sub-agents attributed and one on `auto` (inline for clients that name no protocol version).
SA_AIMOCK_PORT=$(free_port)
setsid tests/node/node_modules/.bin/aimock -c tests/fixtures/aimock-subagents.json -p "$SA_AIMOCK_PORT" --host 127.0.0.1 \
  </dev/null >"$ARTIFACTS/subagents-aimock.log" 2>&1 &
PIDS+=($!)
wait_for "http://127.0.0.1:$SA_AIMOCK_PORT/health" "aimock (sub-agents)" "${PIDS[-1]}"
SA_REMOTE_PORT=$(free_port)
PORT="$SA_REMOTE_PORT" OPENAI_BASE_URL="http://127.0.0.1:$SA_AIMOCK_PORT/v1" OPENAI_API_KEY=e2e-test-key AGENT_MODEL=remote-model \
  MODEL_MAX_RETRIES=1 RUST_LOG=info setsid target/debug/agui-lambda </dev/null >"$ARTIFACTS/subagents-remote.log" 2>&1 &
PIDS+=($!)
SA_PROFILES=$(python3 scripts/subagent_profiles.py "http://127.0.0.1:$SA_REMOTE_PORT" "http://127.0.0.1:$SA_AIMOCK_PORT/agui")
SA_PORT=$(free_port)
SA_AUTO_PORT=$(free_port)
for server in "$SA_PORT attributed" "$SA_AUTO_PORT auto"; do
  read -r port visibility <<<"$server"
  PORT="$port" OPENAI_BASE_URL="http://127.0.0.1:$SA_AIMOCK_PORT/v1" OPENAI_API_KEY=e2e-test-key AGENT_MODEL=coordinator-model \
    MODEL_MAX_RETRIES=1 AGENT_PROFILES="$SA_PROFILES" AGENT_DEFAULT_PROFILE=coordinator APPROVAL_REQUIRED_TOOLS=get_current_time \
    SUBAGENT_VISIBILITY="$visibility" RUST_LOG=info setsid target/debug/agui-lambda \
    </dev/null >"$ARTIFACTS/subagents-$visibility.log" 2>&1 &
  PIDS+=($!)
done
wait_for_function "http://127.0.0.1:$SA_REMOTE_PORT" "the remote sub-agent" "${PIDS[-3]}"
wait_for_function "http://127.0.0.1:$SA_PORT" "the coordinator (attributed)" "${PIDS[-2]}"
wait_for_function "http://127.0.0.1:$SA_AUTO_PORT" "the coordinator (auto)" "${PIDS[-1]}"
(cd tests/node && AGUI_BASE="http://127.0.0.1:$SA_PORT" AGUI_AUTO_BASE="http://127.0.0.1:$SA_AUTO_PORT" \
  AGUI_REMOTE_BASE="http://127.0.0.1:$SA_REMOTE_PORT" CAPTURE_DIR="$ARTIFACTS/captures" node --test subagents.test.mjs) 2>&1 \
  | tee "$SUITES/subagents.log" \
  || { echo "--- coordinator log"; tail -n 50 "$ARTIFACTS/subagents-attributed.log"; exit 1; }

step "A2A sub-agents: one agui-lambda delegating to another over A2A 1.0"
# B serves its default agent over A2A (get_current_time needs approval); A's coordinator names B's
# agent card as its sub-agent clock_agent. Both on the sub-agents' aimock.
A2A_B_PORT=$(free_port)
PORT="$A2A_B_PORT" OPENAI_BASE_URL="http://127.0.0.1:$SA_AIMOCK_PORT/v1" OPENAI_API_KEY=e2e-test-key AGENT_MODEL=remote-model \
  MODEL_MAX_RETRIES=1 APPROVAL_REQUIRED_TOOLS=get_current_time RUST_LOG=info setsid target/debug/agui-lambda \
  </dev/null >"$ARTIFACTS/a2a-subagents-b.log" 2>&1 &
PIDS+=($!)
A2A_A_PORT=$(free_port)
A2A_PROFILES=$(python3 -c 'import json, sys; print(json.dumps({"coordinator": {"subagents": [{"name": "clock_agent", "description": "Tells the time, over A2A.", "a2a": sys.argv[1] + "/.well-known/agent-card.json", "timeoutMs": 60000}]}}))' "http://127.0.0.1:$A2A_B_PORT")
PORT="$A2A_A_PORT" OPENAI_BASE_URL="http://127.0.0.1:$SA_AIMOCK_PORT/v1" OPENAI_API_KEY=e2e-test-key AGENT_MODEL=coordinator-model \
  MODEL_MAX_RETRIES=1 AGENT_PROFILES="$A2A_PROFILES" AGENT_DEFAULT_PROFILE=coordinator SUBAGENT_VISIBILITY=attributed \
  RUST_LOG=info setsid target/debug/agui-lambda </dev/null >"$ARTIFACTS/a2a-subagents-a.log" 2>&1 &
PIDS+=($!)
wait_for_function "http://127.0.0.1:$A2A_B_PORT" "the A2A agent (B)" "${PIDS[-2]}"
wait_for_function "http://127.0.0.1:$A2A_A_PORT" "the coordinator delegating over A2A (A)" "${PIDS[-1]}"
(cd tests/node && AGUI_BASE="http://127.0.0.1:$A2A_A_PORT" A2A_PEER_BASE="http://127.0.0.1:$A2A_B_PORT" \
  node --test a2a_subagents.test.mjs) 2>&1 | tee "$SUITES/a2a-subagents.log" \
  || { echo "--- A's log"; tail -n 50 "$ARTIFACTS/a2a-subagents-a.log"; echo "--- B's log"; tail -n 50 "$ARTIFACTS/a2a-subagents-b.log"; exit 1; }

step "browser tests: Playwright + Debian chromium"
# Headless chromium (apt, launched by its path) drives tests/node/browser/*.test.mjs: the dev
# page (GET /) and the CopilotKit example, against a local server on aimock whose
# get_current_time needs approval (and the dev page's first five minutes against the demo-model
# server above, AGUI_DEMO_BASE: its suggestions, the demo team, the demo's A2UI form; the assistant-ui
# example's A2UI form on the A2UI=assistant-ui server, AGUI_A2UI_BASE). Screenshots land in .ci/artifacts/screenshots.
# The same server as the AG-UI 1.0 tests above: its settings are the ones these tests need.
# The dev page's Memories panel needs a server with MEMORY=on (the demo model is enough).
MEMORY_PORT=$(free_port)
PORT="$MEMORY_PORT" MEMORY=on RUST_LOG=info setsid target/debug/agui-lambda </dev/null >"$ARTIFACTS/memory.log" 2>&1 &
PIDS+=($!)
wait_for_function "http://127.0.0.1:$MEMORY_PORT" "the local server (MEMORY=on)" "${PIDS[-1]}"
# The dev page across streams that end before their run (STREAM_MAX_SECS=1, the demo model): the
# notice that the run goes on, followed as under Lambda after a hand-off.
LIMITED_PORT=$(free_port)
PORT="$LIMITED_PORT" STREAM_MAX_SECS=1 RUST_LOG=info setsid target/debug/agui-lambda </dev/null >"$ARTIFACTS/stream-limited.log" 2>&1 &
PIDS+=($!)
wait_for_function "http://127.0.0.1:$LIMITED_PORT" "the local server (STREAM_MAX_SECS=1)" "${PIDS[-1]}"
(cd tests/node && AGUI_BASE="http://127.0.0.1:$APPROVAL_PORT" AIMOCK_URL="http://127.0.0.1:$AIMOCK_PORT" \
  AGUI_DEMO_BASE="http://127.0.0.1:$DEMO_PORT" AGUI_MEMORY_BASE="http://127.0.0.1:$MEMORY_PORT" \
  AGUI_STREAM_LIMITED_BASE="http://127.0.0.1:$LIMITED_PORT" AGUI_SUBAGENTS_BASE="http://127.0.0.1:$SA_PORT" \
  AGUI_MCP_APPS_BASE="http://127.0.0.1:$MCP_APPS_PORT" AGUI_A2UI_BASE="http://127.0.0.1:$A2UI_PORT" \
  CHROMIUM_PATH="${CHROMIUM_PATH:-/usr/bin/chromium}" SCREENSHOT_DIR="$ARTIFACTS/screenshots" \
  node --test --test-concurrency=1 browser/) 2>&1 | tee "$SUITES/browser.log" \
  || { echo "--- local server log"; tail -n 50 "$ARTIFACTS/approval.log"; exit 1; }

step "AG-UI 1.1 conformance: the servers driven, every captured stream checked, docs/conformance.md as generated"
# scripts/agui_conformance.py drives the servers still running (runs declaring "1.1", "1.0",
# nothing, "1.7" and "banana"; the run-input cases; conversations of tests/fixtures/conformance/),
# its streams joining the captures, then checks every capture against the AG-UI 1.1 schema and
# rules, that each rule met its situation, and that docs/conformance.md is what it generates.
CONFORMANCE="$ARTIFACTS/conformance"
mkdir -p "$CONFORMANCE"
drive() { # name port arguments…: the findings are reported (and fail) by the check below
  python scripts/agui_conformance.py --url "http://127.0.0.1:$2/agent" --prompt hello --ours --name "$1" \
    --capture-dir "$ARTIFACTS/captures" --report "$CONFORMANCE/$1.json" "${@:3}" >"$CONFORMANCE/$1.log" 2>&1 || true
}
cancel_url() { echo "http://127.0.0.1:$1/threads/{threadId}/runs/{runId}/cancel"; }
drive local "$LOCAL_PORT" --scenarios tests/fixtures/conformance/aimock.json --cancel-url "$(cancel_url "$LOCAL_PORT")" \
  --capabilities "http://127.0.0.1:$LOCAL_PORT/capabilities"
drive approvals "$APPROVAL_PORT" --skip-builtin --scenarios tests/fixtures/conformance/approvals.json
drive cut "$CUT_PORT" --skip-builtin --scenarios tests/fixtures/conformance/cut.json
for provider in responses anthropic; do
  port_of=${provider^^}_PORT
  drive "$provider" "${!port_of}" --skip-builtin --versions 1.1 --scenarios tests/fixtures/conformance/providers.json
done
drive subagents "$SA_PORT" --skip-builtin --versions 1.1 --scenarios tests/fixtures/conformance/subagents.json \
  --cancel-url "$(cancel_url "$SA_PORT")"
python scripts/agui_conformance.py ci --captures "$ARTIFACTS/captures" --reports "$CONFORMANCE" 2>&1 | tee "$SUITES/agui-conformance.log"

step "ag-ui-validate on every captured stream"
captures=("$ARTIFACTS"/captures/*.sse)
[ -e "${captures[0]}" ] || { echo "no streams were captured"; exit 1; }
for capture in "${captures[@]}"; do
  # A stream cut before its run may close a tool call whose arguments were still being written:
  # AG-UI says closing establishes completeness, not validity; ag-ui-validate's AGUI204 wants JSON.
  cut=()
  if tail -n 2 "$capture" | grep -q '"result":{"continues":true'; then cut=(--rule AGUI204=warning); fi
  ag-ui-validate --no-color "${cut[@]}" "$capture" >"$capture.report" 2>&1 || { cat "$capture.report"; echo "ag-ui-validate rejected $capture"; exit 1; }
done
echo "ag-ui-validate: ${#captures[@]} streams, no violation"
# Every A2UI operation in them against the A2UI v0.9 JSON Schema.
python scripts/check_a2ui_captures.py "${captures[@]}" | tee "$SUITES/a2ui-schema.log"
echo "ag-ui-validate: ${#captures[@]} passed, 0 failed" >"$SUITES/ag-ui-validate.log"
# Quiet by default: cargo-lambda's own warnings and lambda_runtime's start-up warning about
# AWS_LAMBDA_MAX_CONCURRENCY / `concurrency-tokio` fail the run (the function's warnings about the
# failure scenarios the suite plays are expected).
if grep -E '^\s*WARN |concurrency-tokio|AWS_LAMBDA_MAX_CONCURRENCY' "$ARTIFACTS/watch.log" >"$ARTIFACTS/watch.warnings"; then
  cat "$ARTIFACTS/watch.warnings"; echo "warnings in .ci/artifacts/watch.log (cargo lambda watch)"; exit 1
fi
# Nothing asked for AWS, so nothing may have asked the instance metadata service (IMDS) either.
if grep -iE 'IMDS|instance metadata|no AWS credentials' "$ARTIFACTS/watch.log" >"$ARTIFACTS/watch.aws"; then
  cat "$ARTIFACTS/watch.aws"; echo "AWS settings were looked for under cargo lambda watch with nothing asking for AWS"; exit 1
fi
cleanup
PIDS=()

step "docs: relative links and anchors of README.md, CHANGELOG.md and docs/*.md (offline)"
python3 scripts/check_links.py 2>&1 | tee "$SUITES/links.log"

step "README and docs examples, as written, against the local server (demo model)"
python3 scripts/readme_examples.py --binary target/debug/agui-lambda --artifacts "$ARTIFACTS/readme" 2>&1 | tee "$SUITES/readme.log"

step "SAM template: offline transform, then cfn-lint on source and result"
python scripts/sam_transform.py template.yaml >"$ARTIFACTS/template.transformed.json"
cfn-lint template.yaml "$ARTIFACTS/template.transformed.json"
echo "cfn-lint: clean"
# Deployed with a coordinator whose remote sub-agent's credentials are in a secret (the example
# of docs/deploy-and-hosting.md): linted with those values, and the role may read that secret
# and no other; with the defaults it may read none.
SUBAGENT_SECRET=arn:aws:secretsmanager:us-east-1:123456789012:secret:agui/weather-agent-AbCdEf
SUBAGENT_PARAMETERS=("AgentProfiles={\"coordinator\":{\"subagents\":[\"researcher\",{\"name\":\"weather\",\"url\":\"https://weather.example.com/agent\",\"headersSecretId\":\"$SUBAGENT_SECRET\"}]},\"researcher\":{\"description\":\"Finds facts.\"}}"
  AgentDefaultProfile=coordinator "SubagentSecretArns=$SUBAGENT_SECRET")
cfn-lint template.yaml --parameters "${SUBAGENT_PARAMETERS[@]}"
python3 tests/check_template_secrets.py "$ARTIFACTS/template.transformed.json" 2>&1 | tee "$SUITES/template-secrets.log"
python3 tests/check_template_secrets.py "$ARTIFACTS/template.transformed.json" "${SUBAGENT_PARAMETERS[@]}" 2>&1 | tee -a "$SUITES/template-secrets.log"
echo "template-secrets: 2 passed, 0 failed" >>"$SUITES/template-secrets.log"

step "supply chain: cargo deny"
bash scripts/deny.sh

step "rustdoc examples (cargo test --doc)"
cargo test --locked --doc 2>&1 | tee "$SUITES/cargo-doc.log"

step "cargo test without Node on PATH (every test but the wire ones, named wire_…)"
# A PATH of links to every program on PATH but Node's: the tests that are not about the model's
# wire format run on the in-process fixture model and must not need Node.
NODELESS="$ARTIFACTS/path-without-node"
mkdir -p "$NODELESS"
IFS=: read -ra path_dirs <<<"$PATH"
for dir in "${path_dirs[@]}"; do
  for program in "$dir"/*; do
    name="${program##*/}"
    case "$name" in node | nodejs | npm | npx | corepack) continue ;; esac
    [[ -x "$program" && ! -e "$NODELESS/$name" ]] && ln -s "$program" "$NODELESS/$name"
  done
done
if PATH="$NODELESS" command -v node >/dev/null; then echo "node is still on the Node-less PATH"; exit 1; fi
PATH="$NODELESS" cargo test --locked --lib --bins --tests -- --skip wire_ >"$SUITES/cargo-without-node.log" 2>&1 \
  || { tail -n 60 "$SUITES/cargo-without-node.log"; echo "cargo test without Node failed"; exit 1; }
grep '^test result' "$SUITES/cargo-without-node.log"

step "benches, once each (smoke test)"
cargo test --locked --bench '*' 2>&1 | tee "$SUITES/benches.log"

step "the wire tests (cargo test -- wire_, with Node; the rest ran above)"
cargo test --locked --lib --bins --tests -- wire_ 2>&1 | tee "$SUITES/cargo-wire.log"

step "summary"
TIMINGS+=("$(printf '%5d s  %s' $((SECONDS - started)) "in all")")
printf '%s\n' "${TIMINGS[@]}" >"$ARTIFACTS/timings.txt"
echo "step durations (also in .ci/artifacts/timings.txt):"
printf '  %s\n' "${TIMINGS[@]}"
# The last line: every test of every suite above (cargo's, node's, the browser's, the README
# examples' and the streams ag-ui-validate checked), summed.
python3 scripts/test_summary.py "$SUITES" | tee "$ARTIFACTS/summary.txt"
