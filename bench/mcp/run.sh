#!/usr/bin/env bash
# Compares `toolgate serve` with @modelcontextprotocol/server-filesystem@2026.8.31
# over stdio: the same folder, the same 2,000 reads of a small file, first
# sequential and then 8 in flight, from one go-sdk client. Prints calls/s,
# p50/p99 latency, peak RSS (VmHWM of the server process), time to the
# initialize answer, and the ratios. toolgate runs governed: the default
# policy (protected paths, secret redaction, output budget, rate limits and
# the loop guard) and a hash-chained audit log (one record per call). The
# only change to the defaults: the loop guard allows identical calls without
# bound, since 2,000 identical reads are the benchmark, not a model looping
# (the guard still inspects every call).
#
#   bench/mcp/run.sh [N] [IN_FLIGHT]      (defaults 2000 and 8)
set -euo pipefail

repo="$(cd "$(dirname "$0")/../.." && pwd)"
n="${1:-2000}"
conc="${2:-8}"
"$repo/scripts/test-deps.sh" >/dev/null

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/dir" "$work/bin"
printf 'limits:\n  loop:\n    max: 1000000\n' >"$work/policy.yaml"
printf 'line %s of a small file read by the MCP benchmark\n' $(seq 20) >"$work/dir/small.txt"
(cd "$repo" && go build -o "$work/bin/toolgate" ./cmd/toolgate && go build -o "$work/bin/mcpbench" ./bench/mcp)

"$work/bin/mcpbench" -toolgate "$work/bin/toolgate" \
	-node "$repo/.cache/node22/node_modules/node/bin/node" \
	-fs "$repo/.cache/mcp/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js" \
	-dir "$work/dir" -file small.txt -audit "$work/audit.jsonl" -policy "$work/policy.yaml" -n "$n" -c "$conc"
