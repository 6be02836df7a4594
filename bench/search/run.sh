#!/usr/bin/env bash
# Compares search_files' engine (toolsets/fs/internal/search) with ripgrep on
# the Go source tree: the same three patterns, all matches, best wall time of
# 5 runs after a warm-up, and the number of matching lines each tool found.
#
#   bench/search/run.sh [DIR]      (DIR defaults to $(go env GOROOT)/src)
set -euo pipefail

repo="$(cd "$(dirname "$0")/../.." && pwd)"
dir="${1:-$(go env GOROOT)/src}"
runs=5

if ! command -v rg >/dev/null 2>&1; then
	echo "installing ripgrep..." >&2
	if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
	$sudo apt-get update -qq >/dev/null
	$sudo apt-get install -y -qq ripgrep >/dev/null
fi

bin="$(mktemp -d)"
trap 'rm -rf "$bin"' EXIT
(cd "$repo" && go build -o "$bin/searchbench" ./toolsets/fs/internal/search/searchbench)

# best_of CMD...: runs CMD once to warm up, then $runs times; prints the best
# wall time in seconds. The output of the last run is left in $bin/out.
best_of() {
	"$@" >"$bin/out"
	local best=""
	for _ in $(seq "$runs"); do
		local t0 t1
		t0=$(date +%s%N)
		"$@" >"$bin/out"
		t1=$(date +%s%N)
		local ns=$((t1 - t0))
		if [ -z "$best" ] || [ "$ns" -lt "$best" ]; then best=$ns; fi
	done
	awk -v ns="$best" 'BEGIN { printf "%.3f", ns / 1e9 }'
}

echo "tree: $dir ($(find "$dir" -type f | wc -l) files), $(nproc) CPUs, ripgrep $(rg --version | sed -n '1s/ripgrep //p'), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-22s %10s %10s %8s %10s %10s\n' pattern "rg (s)" "ours (s)" ratio "rg lines" "our lines"
status=0
bench() {
	local label=$1 flag=$2 pattern=$3
	local rg_args=(-n --no-heading)
	local our_args=()
	if [ "$flag" = "-i" ]; then rg_args+=(-i); our_args+=(-i); fi
	local t_rg t_ours n_rg n_ours
	t_rg=$(cd "$dir" && best_of rg "${rg_args[@]}" -e "$pattern")
	n_rg=$(wc -l <"$bin/out")
	t_ours=$(best_of "$bin/searchbench" "${our_args[@]}" "$pattern" "$dir")
	n_ours=$(cat "$bin/out")
	local ratio
	ratio=$(awk -v a="$t_ours" -v b="$t_rg" 'BEGIN { printf "%.2f", a / b }')
	printf '%-22s %10s %10s %8s %10s %10s\n' "$label" "$t_rg" "$t_ours" "$ratio" "$n_rg" "$n_ours"
	if [ "$n_rg" != "$n_ours" ]; then status=1; fi
}
bench "ErrUnexpectedEOF" "" 'ErrUnexpectedEOF'
bench 'func \w+Context\(' "" 'func \w+Context\('
bench "-i unexpected eof" "-i" 'unexpected eof'
if [ "$status" != 0 ]; then echo "line counts differ" >&2; fi
exit "$status"
