#!/usr/bin/env bash
# What the result check (trust.results, issue 32) adds to reading a 1 MB
# file: read_file through the engine without and with trust.ResultCheck
# (BenchmarkReadFileChecked in toolsets/fs), on a log (data: no cue can add
# up, one pass over the bytes) and on source and docs (prose full of cues,
# read sentence by sentence), and then whole `toolgate call read_file`
# processes with trust.results off and mark. It prints the CPU time of each
# (user + system: what a loaded machine inflates least) and the ratios.
#
#   bench/resultcheck/run.sh [COUNT]     (COUNT runs of each; default 5)
set -euo pipefail

repo="$(cd "$(dirname "$0")/../.." && pwd)"
count="${1:-5}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "== in one process: BenchmarkReadFileChecked (cpu-ns/op, median of $count)"
(cd "$repo" && go test ./toolsets/fs -run '^$' -bench BenchmarkReadFileChecked -benchtime 20x -count "$count") >"$tmp/bench.txt"
awk '/^BenchmarkReadFileChecked/ {
	split($1, p, "/"); sub(/-[0-9]+$/, "", p[3]);
	for (i = 2; i <= NF; i++) if ($(i+1) == "cpu-ns/op") v[p[2] "/" p[3]] = v[p[2] "/" p[3]] " " $i
}
function median(s,   a, n, i, j, t) {
	n = split(s, a, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	return a[int((n + 1) / 2)]
}
END {
	for (k in v) m[k] = median(v[k])
	for (f in m) { split(f, q, "/"); files[q[1]] = 1 }
	for (f in files) {
		u = m[f "/unchecked"]; c = m[f "/checked"]
		printf "%-8s unchecked %8.0f µs  checked %8.0f µs  ratio %.2f\n", f, u / 1000, c / 1000, c / u
	}
}' "$tmp/bench.txt"

echo "== whole processes: toolgate call read_file of 1 MB (user+sys CPU, median of $count)"
(cd "$repo" && go build -o "$tmp/toolgate" ./cmd/toolgate)
ws="$tmp/ws"
mkdir -p "$ws"
python3 - "$ws" "$repo" <<'PY'
import glob, os, sys
ws, repo = sys.argv[1], sys.argv[2]
s, i = "", 0
while len(s) < 1 << 20:
    s += "2026-12-01T10:%02d:%02dZ INFO request %d served in %dms path=/api/v1/items/%d status=200\n" % (i // 60 % 60, i % 60, i, i % 97, i * 7)
    i += 1
open(os.path.join(ws, "server.log"), "w").write(s[:1 << 20])
d = ""
while len(d) < 1 << 20:
    for f in sorted(glob.glob(repo + "/docs/*.md")) + sorted(glob.glob(repo + "/engine/*.go")):
        if not f.endswith("trust.md"):
            d += open(f).read()
open(os.path.join(ws, "docs.txt"), "w").write(d[:1 << 20])
PY
printf 'trust:\n  results: off\n' >"$tmp/off.yaml"
printf 'trust:\n  results: mark\n' >"$tmp/mark.yaml"
python3 - "$tmp" "$((2 * count))" <<'PY'
import os, resource, subprocess, sys
tmp, n = sys.argv[1], int(sys.argv[2])
def cpu(f, mode):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([tmp + "/toolgate", "call", "read_file", '{"path":"%s"}' % f, "--policy", tmp + "/" + mode + ".yaml", "--audit", "off"],
                   cwd=tmp + "/ws", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
for f in ("server.log", "docs.txt"):
    t = {"off": [], "mark": []}
    for _ in range(n):
        for mode in ("off", "mark"):
            t[mode].append(cpu(f, mode))
    med = {m: sorted(v)[len(v) // 2] for m, v in t.items()}
    print("%-10s off %6.1f ms  mark %6.1f ms  ratio %.2f" % (f, 1000 * med["off"], 1000 * med["mark"], med["mark"] / med["off"]))
PY
echo "(a shared, loaded machine: CPU time, not wall time; rerun for spread)"
