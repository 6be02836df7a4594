#!/usr/bin/env bash
# Remote sandboxes (issue 28): a call through `serve --http --stateless`
# with sandbox.backend runner (a `toolgate runner` on loopback) against
# the same call with backend local, one call at a time, in alternating
# rounds: read_file of a small file (goal ≤ 1.5× local's p50) and
# execute_command `true` (goal ≤ 1.3×).
#
#   bench/remote/run.sh [-seq CALLS] [-rounds R]
set -euo pipefail

repo="$(cd "$(dirname "$0")/../.." && pwd)"
"$repo/scripts/test-deps.sh" >/dev/null

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$repo" && go build -o "$work/toolgate" ./cmd/toolgate && go build -o "$work/remote" ./bench/remote)
"$work/remote" -toolgate "$work/toolgate" "$@"
