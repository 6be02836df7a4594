#!/usr/bin/env bash
# Compares `toolgate serve` with @modelcontextprotocol/server-filesystem@2026.8.31
# over stdio: the same folder, the same 2,000 reads of a small file, first
# sequential and then 8 in flight, from one go-sdk client, in three rounds
# alternating the servers (the figures are medians). Prints calls/s,
# p50/p99 latency, peak RSS (VmHWM of the server process), time to the
# initialize answer, and the ratios. toolgate runs governed: the default
# policy (protected paths, secret redaction, output budget, rate limits and
# the loop guard) and a hash-chained audit log (one record per call). The
# only change to the defaults: the loop guard allows identical calls without
# bound, since 2,000 identical reads are the benchmark, not a model looping
# (the guard still inspects every call). The last line says whether issue
# 19's goals are met: toolgate's server CPU per call and peak RSS each at
# most 1/3 of the reference's.
#
# With "http" as the third argument it runs the same loop over streamable
# HTTP (`toolgate serve --http` on loopback); server-filesystem has no HTTP
# transport, so the peer there is @modelcontextprotocol/server-everything's
# echo tool (a different tool: a peer, not a reference).
#
#   bench/mcp/run.sh [N] [IN_FLIGHT] [stdio|http]      (defaults 2000, 8, stdio)
set -euo pipefail

repo="$(cd "$(dirname "$0")/../.." && pwd)"
n="${1:-2000}"
conc="${2:-8}"
mode="${3:-stdio}"
"$repo/scripts/test-deps.sh" >/dev/null

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/dir" "$work/bin"
printf 'limits:\n  loop:\n    max: 1000000\n' >"$work/policy.yaml"
printf 'line %s of a small file read by the MCP benchmark\n' $(seq 20) >"$work/dir/small.txt"
(cd "$repo" && go build -o "$work/bin/toolgate" ./cmd/toolgate && go build -o "$work/bin/mcpbench" ./bench/mcp)

mcp="$repo/.cache/mcp/node_modules/@modelcontextprotocol"
case "$mode" in
stdio) transport=(-fs "$mcp/server-filesystem/dist/index.js") ;;
http) transport=(-http -everything "$mcp/server-everything/dist/index.js") ;;
*)
	echo "usage: bench/mcp/run.sh [N] [IN_FLIGHT] [stdio|http]" >&2
	exit 2
	;;
esac
"$work/bin/mcpbench" -toolgate "$work/bin/toolgate" -node "$repo/.cache/node22/node_modules/node/bin/node" "${transport[@]}" \
	-dir "$work/dir" -file small.txt -audit "$work/audit.jsonl" -policy "$work/policy.yaml" -n "$n" -c "$conc"
