#!/usr/bin/env bash
# Measures the process tools through `toolgate serve --http` (see main.go):
# start_process of `true` against execute_command of `true` (goal: p50
# ratio <= 1.2), the server's CPU per read_process with new output (goal
# <= 200 µs), the floor under it (an empty tools/call) and the idle cost of
# 8 owners x 8 idle processes (goal <= 5 % of one core). toolgate and toolgate-sandbox are built from a clean clone
# at HEAD (toolgate uses the helper beside it only when both come from the
# same clean commit).
#
#   bench/processes/run.sh [-n ROUNDS] [-reads N] [-warm N] [-idle DURATION] [-only start,read,floor,idle] [-policy YAML]
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

. "$repo/bench/cleanbuild.sh"
clean_builds "$repo" "$work"
(cd "$work/src-head" && go build -o "$work/processes-bench" ./bench/processes)
"$work/processes-bench" "$@" "${bins[@]}"
