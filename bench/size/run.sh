#!/usr/bin/env bash
# Builds the three programs as `make build` does (go build -buildvcs=auto,
# no other flags) into a temporary folder and prints the size of each, in
# MB (10^6 bytes) and bytes. The README's binary sizes come from here, and
# cmd/toolgate's TestReadmeBinarySize fails when its figure for the lean
# toolgate is more than 20 % off.
#
#   bench/size/run.sh
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$repo" && go build -buildvcs=auto -o "$work/" ./cmd/toolgate ./cmd/toolgate-agent ./cmd/toolgate-sandbox)
printf '%-18s %8s %12s\n' program MB bytes
for p in toolgate toolgate-agent toolgate-sandbox; do
	b=$(stat -c %s "$work/$p")
	awk -v p="$p" -v b="$b" 'BEGIN { printf "%-18s %8.1f %12d\n", p, b / 1e6, b }'
done
printf '(%s, %s/%s)\n' "$(go version | cut -d' ' -f3)" "$(go env GOOS)" "$(go env GOARCH)"
