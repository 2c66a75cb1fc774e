#!/usr/bin/env bash
# The SAM build path, as `sam deploy` would use it: `sam build` of template.yaml for x86_64 (SAM's
# rust-cargolambda builder, a beta feature, runs `cargo lambda build --release`), then checks that
# .aws-sam/build/AguiFunction/bootstrap is an x86_64 executable that starts and serves.
# x86_64 because no aarch64 Rust target can be fetched here; arm64 is the template's default
# (docs/deploy-and-hosting.md). Not part of the README's test command (a release build with fat LTO takes
# minutes); .ci/run runs it after that command.
#
#   bash scripts/sam_build.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
ARTIFACTS="$ROOT/.ci/artifacts"
mkdir -p "$ARTIFACTS"
log() { printf '[sam-build] %s\n' "$*"; }
start=$SECONDS

bash scripts/install-test-tools.sh >/dev/null
export PATH="$ROOT/.venv/bin:$PATH"
command -v file >/dev/null || bash scripts/prerequisites.sh test

rm -rf .aws-sam
log "sam build --beta-features --parameter-overrides Architecture=x86_64 (log: .ci/artifacts/sam-build.log)"
SAM_CLI_TELEMETRY=0 sam build --beta-features --parameter-overrides Architecture=x86_64 \
  >"$ARTIFACTS/sam-build.log" 2>&1 || { tail -n 40 "$ARTIFACTS/sam-build.log"; log "sam build failed"; exit 1; }

BOOTSTRAP=.aws-sam/build/AguiFunction/bootstrap
file "$BOOTSTRAP" | tee "$ARTIFACTS/bootstrap.file" | grep -q 'ELF 64-bit LSB .*x86-64' \
  || { cat "$ARTIFACTS/bootstrap.file"; log "sam build did not produce an x86_64 bootstrap"; exit 1; }

# It starts and serves: as the local server (no AWS_LAMBDA_RUNTIME_API), a thread it does not
# have is its own 404.
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
PORT="$PORT" "$BOOTSTRAP" </dev/null >"$ARTIFACTS/bootstrap.log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT
served=""
for _ in $(seq 1 100); do
  if curl -s "http://127.0.0.1:$PORT/threads/ready-check" | grep -q '"thread_not_found"'; then served=1; break; fi
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
[[ -n "$served" ]] || { cat "$ARTIFACTS/bootstrap.log"; log "the bootstrap did not serve"; exit 1; }
log "ok in $((SECONDS - start)) s: $BOOTSTRAP, $(stat -c %s "$BOOTSTRAP") bytes, $(cut -d, -f1-2 "$ARTIFACTS/bootstrap.file" | cut -d: -f2-), starts and serves"
