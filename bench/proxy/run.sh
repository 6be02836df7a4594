#!/usr/bin/env bash
# Measures what `toolgate proxy` adds to a tools/call: one go-sdk client
# calls @modelcontextprotocol/server-filesystem@2026.8.31 directly and
# through toolgate proxy (both over stdio, interleaved in one run), 2,000
# read_text_file calls of a small file one at a time, then 2,000 with 8 in
# flight, each target warmed up first by 3,000 calls that are not
# measured (the same for every target: the figures are of the steady
# state, after the processes' heaps have grown to their size). The
# processes run twice, started in one order and then in the reverse one,
# for half the calls each: the process started first costs a few µs more a
# call for its whole life, which a fixed order put on one gateway. Prints
# p50/p99 of both, their ratio, and the CPU time per call of the gateway
# process (its own) and of the Node server behind it (the scheduler's count
# of their threads' run time, in all and in each phase); it ends with the
# goals of issue 30, each met or not: goal 1 (p50 through the proxy <=
# 1.3x direct, one at a time and in flight), goal 2 (the gateway's CPU per
# call <= 1/3 of the upstream's), both with the upstream bare, and goal 3
# (the same with the upstream in its box). The same upstream behind
# bench/proxy/relay, a Go program that only copies lines, is measured in
# turn with the others and printed last: the floor of goal 1 on this
# machine (what the extra hop alone costs) and the gateway's own share
# above it. About a minute and a half on 2 cores.
#
# The gateway runs governed as a user would run it: the default policy
# (protected paths, secret redaction, output budget, rate limits, the loop
# guard), a hash-chained audit log (one record per call), the trust block's
# defaults (tool definitions pinned at first sight in a pin file beside the
# policy, every result checked for injected instructions and marked when
# flagged), no guardrail webhook, telemetry off (no OTEL_* variables). The
# only change to the defaults, as in bench/mcp: the loop guard allows
# identical calls without bound (it still inspects every call).
#
# The proxied server runs in its box (--write on its folder, issue 26) and,
# in the same run, bare (--unisolated): the start-up of each (the median of
# 11 starts, interleaved) and the ratio of
# their p50s are printed against the box's goals (<= 30 ms more to start,
# +-5 % per call).
#
# With --serve, toolgate serve (same policy, its own audit log) is measured
# as an upstream too. With --start, only the start-ups are measured (STARTS
# of each, default 21), of this checkout's build and of each other
# toolgate given (a build of another commit, with its toolgate-sandbox
# beside it), boxed and bare, all interleaved: an A/B of the box's start.
#
# With --timeline, the profile of what remains of a relayed call, hop by
# hop: N sequential read_text_file calls (default 1000) through the bare
# gateway (--unisolated), through each other toolgate given (bare too: an
# A/B in one trace), through the floor relay and directly, the targets in
# turn as goal 1's one-at-a-time phase calls them (each finds its code
# cold, as there), while `perf record -a` records every read(2) and
# write(2) on the machine (entry and exit, perf's own excluded). Each
# call is the chain A client writes the
# request, B the gateway's read returns it, C the gateway writes it to
# Node, D Node's read returns it, E Node writes the answer, F the
# gateway's read returns it, G the gateway writes it to the client, H the
# client's read returns it (directly: A, D, E, H); each process's fds are
# learnt from /proc/PID/fd (the client is proxybench itself, the gateway
# its child, Node the gateway's). Prints p50 and p90 of each hop, what the
# gateway adds of its own (B->C + F->G) and what the extra hop's wake-ups
# add, and the same for the relay: its wake-ups are the hop's own, the
# gateway's beyond them follow what it does after a write before it
# sleeps (a pipe write wakes its reader on the writer's CPU when it can).
# Needs perf (Debian: linux-perf) and root. Limits: perf costs ~1-2
# µs per event (two per syscall), which is in every figure; one run is one
# placement of the processes on the CPUs (a wake-up on the same CPU and on
# the other one differ); a difference of a few µs is not resolved.
#
# With --footprint, the code one relayed call runs: the bare gateway and
# the floor relay each run under callgrind (valgrind), get 1,500 calls, then
# N (default 200) counted ones; prints the instructions a call and the
# distinct 64-byte lines of code the N calls ran, in all and by package.
# One at a time every call finds that code cold (Node ran in between and
# took the caches), so its cost beyond its instructions grows with it:
# a measure of the gateway's own share of goal 1 that does not move with
# the machine's load. About a minute.
#
#   bench/proxy/run.sh [--serve] [N] [IN_FLIGHT]      (defaults 2000 and 8)
#   bench/proxy/run.sh --start [STARTS] [OTHER_TOOLGATE]...
#   bench/proxy/run.sh --timeline [N [OTHER_TOOLGATE]...]  (default 1000; root, perf)
#   bench/proxy/run.sh --footprint [N]                (default 200; valgrind)
set -euo pipefail

repo="$(cd "$(dirname "$0")/../.." && pwd)"
serve=()
only=()
case "${1:-}" in
--serve)
	serve=(-serve)
	shift
	;;
--start)
	only=(-only start -starts "${2:-21}")
	shift $(($# >= 2 ? 2 : 1))
	for other in "$@"; do
		only+=(-compare "$(realpath "$other")")
	done
	set --
	;;
--timeline)
	if ! command -v perf >/dev/null || [ "$(id -u)" != 0 ]; then
		echo "bench/proxy/run.sh --timeline needs perf (Debian: apt-get install linux-perf) and root" >&2
		exit 1
	fi
	only=(-only timeline)
	calls="${2:-1000}"
	shift $(($# >= 2 ? 2 : 1))
	for other in "$@"; do
		only+=(-compare "$(realpath "$other")")
	done
	set -- "$calls"
	;;
--footprint)
	if ! command -v valgrind >/dev/null; then
		echo "bench/proxy/run.sh --footprint needs valgrind (Debian: apt-get install valgrind)" >&2
		exit 1
	fi
	only=(-only footprint -warm 1500)
	set -- "${2:-200}"
	;;
esac
n="${1:-2000}"
conc="${2:-8}"
"$repo/scripts/test-deps.sh" >/dev/null

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/dir" "$work/bin"
printf 'limits:\n  loop:\n    max: 1000000\n' >"$work/policy.yaml"
printf 'line %s of a small file read by the MCP benchmark\n' $(seq 20) >"$work/dir/small.txt"
# Built as `make build` builds them (-buildvcs=auto): from a clean tree the
# box starts its servers through the small toolgate-sandbox beside toolgate,
# as an installed toolgate does; from a changed tree (or with VCS stamps off)
# toolgate is its own, slower, helper.
(cd "$repo" && go build -buildvcs=auto -o "$work/bin/" ./cmd/toolgate ./cmd/toolgate-sandbox && go build -o "$work/bin/proxybench" ./bench/proxy && go build -o "$work/bin/relay" ./bench/proxy/relay)

"$work/bin/proxybench" -toolgate "$work/bin/toolgate" \
	-node "$repo/.cache/node22/node_modules/node/bin/node" \
	-fs "$repo/.cache/mcp/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js" \
	-dir "$work/dir" -file small.txt -work "$work" -policy "$work/policy.yaml" -relay "$work/bin/relay" -n "$n" -c "$conc" "${serve[@]}" "${only[@]}"
