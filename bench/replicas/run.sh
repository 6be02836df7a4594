#!/usr/bin/env bash
# toolgate replicas sharing one Redis: what the Redis round trip adds to a
# call (one replica with and without state.redis, one call at a time, in
# alternating rounds), and one replica against two behind a round-robin
# reverse proxy (8 clients): throughput, p50 and p99. Every replica runs
# `serve --http --stateless` governed, with its own audit log.
#
#   bench/replicas/run.sh [-n CALLS] [-c CLIENTS] [-seq CALLS] [-rounds R]
set -euo pipefail

repo="$(cd "$(dirname "$0")/../.." && pwd)"
"$repo/scripts/test-deps.sh" >/dev/null

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$repo" && go build -o "$work/toolgate" ./cmd/toolgate && go build -o "$work/replicas" ./bench/replicas)
"$work/replicas" -toolgate "$work/toolgate" "$@"
