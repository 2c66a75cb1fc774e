#!/usr/bin/env bash
# Builds the OCI image of the function's binary with Debian's buildah: no Docker daemon and no
# base image to download (FROM scratch). The image holds the binary as /bootstrap, the shared
# libraries `ldd` lists for it, and the CA certificates; it starts the local server in AgentCore
# Runtime mode (HOSTING=agentcore, 0.0.0.0:8080), which any container host can run too (set
# HOSTING=server there).
#
#   bash scripts/build_image.sh [--check] [BINARY]
#     BINARY    default: .aws-sam/build/AguiFunction/bootstrap (scripts/sam_build.sh's release
#               build), else target/release/agui-lambda
#     --check   then runs the binary from the image's root filesystem (buildah mount + chroot:
#               no container runtime needed) and checks that it serves /ping and a run through
#               /invocations, and stops with exit 0 on SIGTERM
#   IMAGE=agui-lambda:latest    the image's name
#   OCI_ARCHIVE=path.tar        also writes the image as an OCI archive (to push with skopeo or
#                               `buildah push`)
#
# Root (buildah's vfs storage driver, chroot). The image has the binary's architecture: AgentCore
# Runtime needs ARM64, so build the binary for aarch64-unknown-linux-gnu first (docs/deploy-and-hosting.md).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
ARTIFACTS="$ROOT/.ci/artifacts"
mkdir -p "$ARTIFACTS"
log() { printf '[build-image] %s\n' "$*"; }
started=$SECONDS

check=""
binary=""
for arg in "$@"; do
  case "$arg" in
    --check) check=1 ;;
    *) binary="$arg" ;;
  esac
done
if [[ -z "$binary" ]]; then
  for candidate in .aws-sam/build/AguiFunction/bootstrap target/release/agui-lambda; do
    [[ -x "$candidate" ]] && { binary="$candidate"; break; }
  done
fi
[[ -n "$binary" && -x "$binary" ]] || { log "no binary: run scripts/sam_build.sh or cargo build --release, or name one"; exit 1; }
IMAGE="${IMAGE:-agui-lambda:latest}"
command -v buildah >/dev/null || { log "buildah is missing: apt-get install buildah"; exit 1; }
[[ "$(id -u)" == 0 ]] || { log "run as root (buildah's vfs storage and chroot)"; exit 1; }
BUILDAH=(buildah --storage-driver vfs)

case "$(file -b "$binary")" in
  *x86-64*) arch=amd64 ;;
  *aarch64* | *ARM\ aarch64*) arch=arm64 ;;
  *) log "not an x86_64 or aarch64 executable: $binary"; exit 1 ;;
esac

container=$("${BUILDAH[@]}" from scratch)
trap '"${BUILDAH[@]}" rm "$container" >/dev/null 2>&1 || true' EXIT
"${BUILDAH[@]}" copy --chmod 0755 "$container" "$binary" /bootstrap >/dev/null
# The dynamic loader and every library it resolves, at the paths the binary looks them up.
mapfile -t libraries < <(ldd "$binary" | awk '/=> \//{print $3} /^[ \t]*\/[^ ]+ \(0x/{print $1}' | sort -u)
for library in "${libraries[@]}"; do
  "${BUILDAH[@]}" copy "$container" "$(readlink -f "$library")" "$library" >/dev/null
done
"${BUILDAH[@]}" copy "$container" /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt >/dev/null
"${BUILDAH[@]}" config --arch "$arch" --os linux --entrypoint '["/bootstrap"]' --port 8080 \
  --env HOSTING=agentcore --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
  --label org.opencontainers.image.title=agui-lambda "$container"
"${BUILDAH[@]}" commit --quiet "$container" "$IMAGE" >"$ARTIFACTS/image.id"
if [[ -n "${OCI_ARCHIVE:-}" ]]; then
  "${BUILDAH[@]}" push --quiet "$IMAGE" "oci-archive:$OCI_ARCHIVE"
fi
log "built $IMAGE ($arch) from $binary: ${#libraries[@]} shared libraries, CA certificates; $(stat -c %s "$binary") bytes of binary"

[[ -n "$check" ]] || exit 0

# The image's root filesystem, mounted, and the binary run from it with nothing from the host.
checked=$("${BUILDAH[@]}" from "$IMAGE")
mountpoint=$("${BUILDAH[@]}" mount "$checked")
size=$(du -sb "$mountpoint" | cut -f1)
pid=""
finish() {
  [[ -n "$pid" ]] && kill "$pid" 2>/dev/null || true
  "${BUILDAH[@]}" umount "$checked" >/dev/null 2>&1 || true
  "${BUILDAH[@]}" rm "$checked" "$container" >/dev/null 2>&1 || true
}
trap finish EXIT
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
env -i HOSTING=agentcore PORT="$PORT" RUST_LOG=info "$(command -v chroot)" "$mountpoint" /bootstrap </dev/null >"$ARTIFACTS/image-serve.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
  curl -fs "http://127.0.0.1:$PORT/ping" >"$ARTIFACTS/image-ping.json" 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || { cat "$ARTIFACTS/image-serve.log"; log "the binary exited in the image's root filesystem"; exit 1; }
  sleep 0.1
done
grep -q '"status":"Healthy"' "$ARTIFACTS/image-ping.json" || { log "no Healthy /ping from the image"; exit 1; }
session="image-check-$(date +%s)-0123456789abcdef0123"
curl -fsN "http://127.0.0.1:$PORT/invocations" -H 'content-type: application/json' \
  -H "X-Amzn-Bedrock-AgentCore-Runtime-Session-Id: $session" \
  -d '{"runId":"image-run-1","messages":[{"id":"m1","role":"user","content":"hello from the image"}],"tools":[],"context":[],"state":{},"forwardedProps":{}}' \
  >"$ARTIFACTS/image-run.sse"
grep -q "\"type\":\"RUN_FINISHED\",\"threadId\":\"$session\"" "$ARTIFACTS/image-run.sse" \
  || { tail -n 5 "$ARTIFACTS/image-run.sse"; log "the run from the image did not finish in the session's thread"; exit 1; }
kill -TERM "$pid"
wait "$pid" || { log "the binary did not exit 0 on SIGTERM"; exit 1; }
pid=""
log "ok in $((SECONDS - started)) s: from the image's root filesystem it answers /ping ($(cat "$ARTIFACTS/image-ping.json")), streams a run in the session's thread, and stops with exit 0 on SIGTERM; root filesystem ${size} bytes"
