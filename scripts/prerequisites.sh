#!/usr/bin/env bash
# Checks, before anything is built, that this machine has what a command needs, and stops with
# one clear message naming what is missing and how to install it: never halfway through.
#
#   bash scripts/prerequisites.sh run     # `cargo run`: Rust >= 1.94.1, a C compiler
#   bash scripts/prerequisites.sh tools   # scripts/install-test-tools.sh: Python >= 3.11 with venv, Node >= 20.15 with npm
#   bash scripts/prerequisites.sh test    # scripts/test.sh: all of the above, rustfmt and clippy, Java 17+, curl, setsid, chromium
#   bash scripts/prerequisites.sh fuzz    # scripts/fuzz.sh: Rust, a C and C++ compiler, Python with venv
#
# As root on a machine with apt-get (Debian, Ubuntu), a missing tool that apt can supply is
# installed (one `apt-get update`, then one `apt-get install`); Rust components are added with
# rustup when rustup is there. Everything else is only reported. PREREQ_NO_INSTALL=1 never
# installs.
set -euo pipefail

WHAT="${1:-test}"
RUST_MIN="1.94.1"
NODE_MIN="20.15.0"
PYTHON_MIN="3.11"
JAVA_MIN="17"
PYTHON="${PYTHON:-python3}"
log() { printf '[prerequisites] %s\n' "$*"; }

# version_ge A B: A >= B, both dotted numbers.
version_ge() { [[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" == "$2" ]]; }

missing=()   # "what it is — how to get it"
apt_pkgs=()  # what apt-get could install
rustup_components=()

need_rust() {
  if ! command -v cargo >/dev/null || ! command -v rustc >/dev/null; then
    missing+=("Rust >= $RUST_MIN (cargo, rustc) — install rustup (https://rustup.rs), then: rustup default stable")
    return
  fi
  local v
  v="$(rustc --version | awk '{print $2}')"
  v="${v%%-*}"
  if ! version_ge "$v" "$RUST_MIN"; then
    missing+=("Rust >= $RUST_MIN (edition 2024; found rustc $v) — rustup update stable")
  fi
}

need_rust_components() {
  command -v cargo >/dev/null || return 0
  cargo fmt --version >/dev/null 2>&1 || rustup_components+=(rustfmt)
  cargo clippy --version >/dev/null 2>&1 || rustup_components+=(clippy)
}

need_cc() {
  if ! command -v "${CC:-cc}" >/dev/null && ! command -v gcc >/dev/null && ! command -v clang >/dev/null; then
    missing+=("a C compiler (cc: aws-lc-sys builds AWS-LC from C) — apt: build-essential, dnf: gcc, macOS: xcode-select --install")
    apt_pkgs+=(build-essential)
  fi
}

need_cxx() {
  if ! command -v "${CXX:-c++}" >/dev/null && ! command -v g++ >/dev/null && ! command -v clang++ >/dev/null; then
    missing+=("a C++ compiler (c++: libfuzzer-sys builds libFuzzer) — apt: build-essential, dnf: gcc-c++, macOS: xcode-select --install")
    apt_pkgs+=(build-essential)
  fi
}

need_python() {
  if ! command -v "$PYTHON" >/dev/null; then
    missing+=("Python >= $PYTHON_MIN with venv ($PYTHON) — apt: python3 python3-venv, dnf: python3, brew: python")
    apt_pkgs+=(python3 python3-venv)
    return
  fi
  local v
  v="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
  if ! version_ge "$v" "$PYTHON_MIN"; then
    missing+=("Python >= $PYTHON_MIN (found $v; ag-ui-validate needs 3.11) — a newer python3, or PYTHON=/path/to/python3.11")
  elif ! "$PYTHON" -c 'import venv, ensurepip' >/dev/null 2>&1; then
    missing+=("Python's venv module with ensurepip ($PYTHON -m venv) — apt: python3-venv")
    apt_pkgs+=(python3-venv)
  fi
}

need_node() {
  if ! command -v node >/dev/null; then
    missing+=("Node >= $NODE_MIN with npm — apt: nodejs (Debian 12 and Ubuntu 24.04 ship 18: use NodeSource or nvm), dnf: nodejs npm, brew: node")
    apt_pkgs+=(nodejs)
  else
    local v
    v="$(node --version)"
    v="${v#v}"
    if ! version_ge "$v" "$NODE_MIN"; then
      missing+=("Node >= $NODE_MIN (found $v; @copilotkit/aimock needs it) — NodeSource, nvm or brew: node")
    fi
  fi
  if ! command -v npm >/dev/null; then
    missing+=("npm — apt: npm (NodeSource's nodejs includes it)")
    apt_pkgs+=(npm)
  fi
}

need_java() {
  if ! command -v java >/dev/null; then
    missing+=("Java >= $JAVA_MIN (DynamoDB Local) — apt: openjdk-17-jre-headless, dnf: java-21-openjdk-headless, brew: openjdk@17")
    apt_pkgs+=(JAVA)
    return
  fi
  local v
  v="$(java -version 2>&1 | sed -n 's/.*version "\([0-9][0-9.]*\).*/\1/p' | head -n1)"
  v="${v#1.}" # 1.8 -> 8
  if [[ -z "$v" ]] || ! version_ge "${v%%.*}" "$JAVA_MIN"; then
    missing+=("Java >= $JAVA_MIN (DynamoDB Local; found ${v:-an unreadable version}) — apt: openjdk-17-jre-headless")
    apt_pkgs+=(JAVA)
  fi
}

need_tool() { # command, apt package, what for
  if ! command -v "$1" >/dev/null; then
    missing+=("$1 ($3) — apt: $2, dnf: $2, brew: $2")
    apt_pkgs+=("$2")
  fi
}

need_chromium() { # the browser tests launch Debian's chromium by its path
  local browser="${CHROMIUM_PATH:-/usr/bin/chromium}"
  if [[ ! -x "$browser" ]]; then
    missing+=("chromium at $browser (the browser tests; CHROMIUM_PATH names another) — apt: chromium, dnf: chromium, brew: --cask chromium")
    apt_pkgs+=(chromium)
  fi
}

need_bash() { # the scripts use bash 4.3 features; macOS ships bash 3.2
  if (( BASH_VERSINFO[0] < 4 || (BASH_VERSINFO[0] == 4 && BASH_VERSINFO[1] < 3) )); then
    missing+=("bash >= 4.3 (found $BASH_VERSION) — brew: bash, then run the scripts with that bash")
  fi
}

check() {
  missing=() apt_pkgs=() rustup_components=()
  need_bash
  case "$WHAT" in
    run)   need_rust; need_cc ;;
    tools) need_python; need_node ;;
    fuzz)  need_rust; need_cc; need_cxx; need_python ;;
    test)
      need_rust; need_rust_components; need_cc; need_python; need_node; need_java
      need_tool curl curl "readiness checks and the README's curl examples"
      need_tool setsid util-linux "starts test servers in their own process group"
      need_tool file file "checks the architecture of the sam-built bootstrap"
      need_tool sha256sum coreutils "install stamps"
      need_chromium
      ;;
    *) echo "usage: bash scripts/prerequisites.sh run|tools|test|fuzz" >&2; exit 2 ;;
  esac
}

case "$WHAT" in
  run) COMMAND="cargo run" ;;
  tools) COMMAND="scripts/install-test-tools.sh" ;;
  *) COMMAND="scripts/$WHAT.sh" ;;
esac
check

# ---- install what can be installed ------------------------------------------------------------
installed=0
if [[ ${#rustup_components[@]} -gt 0 ]] && command -v rustup >/dev/null && [[ "${PREREQ_NO_INSTALL:-0}" != "1" ]]; then
  log "adding Rust components: ${rustup_components[*]}"
  rustup component add "${rustup_components[@]}" || true
  installed=1
fi
if [[ ${#apt_pkgs[@]} -gt 0 && "${PREREQ_NO_INSTALL:-0}" != "1" && "$(id -u)" == "0" ]] && command -v apt-get >/dev/null; then
  pkgs=()
  for pkg in $(printf '%s\n' "${apt_pkgs[@]}" | sort -u); do
    if [[ "$pkg" == JAVA ]]; then
      # Debian 12: 17; Debian 13 and Ubuntu 24.04 only have 21 and later as default-jre-headless.
      pkg=openjdk-17-jre-headless
      apt-cache show "$pkg" >/dev/null 2>&1 || pkg=default-jre-headless
    fi
    pkgs+=("$pkg")
  done
  log "installing with apt-get: ${pkgs[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt_log="${TMPDIR:-/tmp}/agui-lambda-apt.log"
  if { apt-get update -qq && apt-get install -y -qq --no-install-recommends --no-upgrade "${pkgs[@]}"; } >"$apt_log" 2>&1; then
    installed=1
  else
    tail -n 20 "$apt_log"
    log "apt-get could not install ${pkgs[*]} (log: $apt_log)"
  fi
fi
[[ $installed -eq 1 ]] && check

for component in "${rustup_components[@]:-}"; do
  [[ -n "$component" ]] && missing+=("cargo $component — rustup component add $component")
done

if [[ ${#missing[@]} -gt 0 ]]; then
  log "MISSING for $COMMAND (docs/testing.md: Prerequisites lists one install line per platform):"
  for item in "${missing[@]}"; do log "  - $item"; done
  if [[ "$(id -u)" != "0" ]] && command -v apt-get >/dev/null && [[ ${#apt_pkgs[@]} -gt 0 ]]; then
    log "as root this script installs the apt packages itself: sudo bash scripts/prerequisites.sh $WHAT"
  fi
  exit 1
fi
found=()
[[ "$WHAT" != tools ]] && found+=("$(rustc --version | awk '{print "rustc", $2}')")
[[ "$WHAT" != run ]] && found+=("$("$PYTHON" --version 2>&1)")
[[ "$WHAT" == test || "$WHAT" == tools ]] && found+=("node $(node --version)")
[[ "$WHAT" == test ]] && found+=("java $(java -version 2>&1 | sed -n 's/.*version "\([^"]*\)".*/\1/p' | head -n1)")
log "ok for $COMMAND: $(IFS=,; echo "${found[*]}" | sed 's/,/, /g')"
