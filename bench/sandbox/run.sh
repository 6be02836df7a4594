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

build() { # build REVISION NAME: a clean clone's binaries into $work/NAME
	# A clone, not a worktree: the go command stamps no commit into a
	# build from a worktree.
	git clone --quiet "$repo" "$work/src-$2"
	git -C "$work/src-$2" checkout --quiet --detach "$(git -C "$repo" rev-parse "$1")"
	(cd "$work/src-$2" && go build -buildvcs=true -o "$work/$2/" ./cmd/toolgate ./cmd/toolgate-sandbox)
	go version -m "$work/$2/toolgate-sandbox" | grep -q 'vcs.modified=false' ||
		{ echo "the $2 build records no clean commit: toolgate would not use its toolgate-sandbox" >&2; exit 1; }
}
build HEAD head
bins=("$work/head/toolgate")
if [ -n "$base" ]; then
	build "$base" base
	bins=("$work/base/toolgate" "${bins[@]}")
fi
(cd "$work/src-head" && go build -o "$work/sandbox-bench" ./bench/sandbox)
"$work/sandbox-bench" "${flags[@]}" "${bins[@]}"
