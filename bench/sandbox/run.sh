#!/usr/bin/env bash
# Times `true` through toolgate's sandbox beside
# `bwrap --unshare-all --ro-bind / / true`, in one run, and prints p50/p95
# and the ratios (see main.go): in this process (plain exec, native cold
# and warm), then through `toolgate serve` (execute_command from a go-sdk
# client over stdio, alternating with bwrap; the goal's line). Needs
# bubblewrap (scripts/test-deps.sh).
#
# toolgate and toolgate-sandbox are built from a clean clone at HEAD:
# toolgate uses the helper beside it only when both come from the same
# clean commit (a build of a worktree or of a changed tree starts toolgate
# itself as the helper, tens of milliseconds slower). Given a second
# revision, it is built too and measured in the same run ([1] that one,
# [2] HEAD).
#
#   bench/sandbox/run.sh [-n RUNS] [-in-process=false] [BASE_REVISION]
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
flags=()
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do
	case "$1" in
	-n | -pause) flags+=("$1" "$2"); shift 2 ;;
	*) flags+=("$1"); shift ;;
	esac
done
base="${1:-}"
command -v bwrap >/dev/null || { echo "bwrap is not installed (scripts/test-deps.sh installs it)" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

. "$repo/bench/cleanbuild.sh"
clean_builds "$repo" "$work" "$base"
(cd "$work/src-head" && go build -o "$work/sandbox-bench" ./bench/sandbox)
"$work/sandbox-bench" "${flags[@]}" "${bins[@]}"
