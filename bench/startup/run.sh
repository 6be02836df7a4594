#!/usr/bin/env bash
# Times whole `toolgate call` processes, interleaved so that they share the
# machine's load, and breaks one call's time down by differences:
#
#   version            the floor of the program: exec, Go runtime, package init
#   read_file, no audit  + the set-up of a call (policy, tool sets, engine)
#   read_file          + the audit log (open, replay of recent calls, append)
#   execute_command    + the sandboxed command (`true`, pre-approved with --yes)
#   bwrap              the peer: `bwrap --unshare-all --ro-bind / / true`
#   hello world        the peer of a call: a Go hello-world program
#
# Goal 5 of issue 19: read_file (audited, every check) within 2x hello world.
#
# It builds toolgate and toolgate-sandbox from a clean clone at HEAD (the
# helper is used only beside a program of the same clean build) and, given
# a second revision, from that one too, and prints p50/p95 of each (wall
# time; and the p50 of each process's own CPU time and page faults) and the
# ratios. The package-init share of the floor is printed from
# GODEBUG=inittrace=1.
#
#   bench/startup/run.sh [-n RUNS] [BASE_REVISION]
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
runs=50
if [ "${1:-}" = "-n" ]; then runs="$2"; shift 2; fi
base="${1:-}"
command -v bwrap >/dev/null || { echo "bwrap is not installed (scripts/test-deps.sh installs it)" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

. "$repo/bench/cleanbuild.sh"
clean_builds "$repo" "$work" "$base"
# The hello-world peer: the same go command and flags, in a module of its own.
mkdir "$work/hello"
printf 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("hello, world") }\n' >"$work/hello/main.go"
(cd "$work/hello" && go mod init hello >/dev/null 2>&1 && go build -buildvcs=true -o "$work/hello/hello" .)
(cd "$repo" && go build -o "$work/startup-bench" ./bench/startup)
"$work/startup-bench" -n "$runs" -hello "$work/hello/hello" "${bins[@]}"
