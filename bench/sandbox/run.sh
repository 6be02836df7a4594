#!/usr/bin/env bash
# Times 100 runs of `true` through toolgate's native sandbox (cold and
# warm: Native.Prestart), through
# `bwrap --unshare-all --ro-bind / / true` and as a plain exec, in one run,
# and prints p50/p95 and the ratios. Needs bubblewrap (scripts/test-deps.sh).
# Extra arguments go to the driver (-n RUNS, -cgroups=false, -pause 150ms).
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/sandbox-bench" ./bench/sandbox
"$bin/sandbox-bench" "$@"
