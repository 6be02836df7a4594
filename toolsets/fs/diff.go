package fs

import (
	"fmt"
	"strings"
)

// diffContext is the number of unchanged lines shown around a change.
const diffContext = 3

// maxDiffEdits bounds the Myers search; past it the changed middle is shown
// as removed and added wholesale (correct, only less minimal).
const maxDiffEdits = 500

// maxDiffBytes caps the text of a diff; the rest is summarised.
const maxDiffBytes = 64 << 10

// splitLines splits s into lines that keep their "\n" (a last line may lack one).
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// diffOp is one line of an edit script: ' ' kept, '-' removed, '+' added.
type diffOp struct {
	kind byte
	text string
}

// diffLines returns an edit script from a to b (Myers' algorithm on the
// part between the common prefix and suffix).
func diffLines(a, b []string) []diffOp {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var ops []diffOp
	for _, l := range a[:pre] {
		ops = append(ops, diffOp{' ', l})
	}
	ops = append(ops, myers(a[pre:len(a)-suf], b[pre:len(b)-suf])...)
	for _, l := range a[len(a)-suf:] {
		ops = append(ops, diffOp{' ', l})
	}
	return ops
}

func myers(a, b []string) []diffOp {
	n, m := len(a), len(b)
	wholesale := func() []diffOp {
		ops := make([]diffOp, 0, n+m)
		for _, l := range a {
			ops = append(ops, diffOp{'-', l})
		}
		for _, l := range b {
			ops = append(ops, diffOp{'+', l})
		}
		return ops
	}
	if n == 0 || m == 0 {
		return wholesale()
	}
	max := n + m
	if max > maxDiffEdits {
		max = maxDiffEdits
	}
	off := max + 1
	v := make([]int, 2*max+3)
	var trace [][]int
	for d := 0; d <= max; d++ {
		snap := make([]int, 2*d+3)
		copy(snap, v[off-d-1:off+d+2])
		trace = append(trace, snap)
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				return backtrack(a, b, trace, d)
			}
		}
	}
	return wholesale()
}

// backtrack walks the saved frontiers back from (len(a), len(b)).
func backtrack(a, b []string, trace [][]int, dEnd int) []diffOp {
	x, y := len(a), len(b)
	var rev []diffOp
	for d := dEnd; d > 0; d-- {
		v := trace[d] // frontier before step d: index k maps to k+d+1
		at := func(k int) int { return v[k+d+1] }
		k := x - y
		var pk int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := at(pk)
		py := px - pk
		for x > px && y > py {
			x--
			y--
			rev = append(rev, diffOp{' ', a[x]})
		}
		if x == px {
			y--
			rev = append(rev, diffOp{'+', b[y]})
		} else {
			x--
			rev = append(rev, diffOp{'-', a[x]})
		}
	}
	for x > 0 && y > 0 {
		x--
		y--
		rev = append(rev, diffOp{' ', a[x]})
	}
	ops := make([]diffOp, len(rev))
	for i, op := range rev {
		ops[len(rev)-1-i] = op
	}
	return ops
}

// unifiedDiff renders the change from old to new as a unified diff with
// file names a/name and b/name ("" when nothing changed).
func unifiedDiff(name, old, new string) string {
	if old == new {
		return ""
	}
	ops := diffLines(splitLines(old), splitLines(new))
	var b strings.Builder
	fmt.Fprintf(&b, "--- a/%s\n+++ b/%s\n", name, name)
	// Find hunks: runs of changes with up to 2*context kept lines inside.
	i := 0
	for i < len(ops) {
		for i < len(ops) && ops[i].kind == ' ' {
			i++
		}
		if i == len(ops) {
			break
		}
		start := max(i-diffContext, 0)
		end := i
		for j := i; j < len(ops); j++ {
			if ops[j].kind != ' ' {
				end = j + 1
				continue
			}
			if j-end >= 2*diffContext {
				break
			}
		}
		stop := min(end+diffContext, len(ops))
		// Line numbers of the hunk's first line in old and new.
		oldLine, newLine := 1, 1
		for _, op := range ops[:start] {
			if op.kind != '+' {
				oldLine++
			}
			if op.kind != '-' {
				newLine++
			}
		}
		oldN, newN := 0, 0
		for _, op := range ops[start:stop] {
			if op.kind != '+' {
				oldN++
			}
			if op.kind != '-' {
				newN++
			}
		}
		if oldN == 0 {
			oldLine--
		}
		if newN == 0 {
			newLine--
		}
		if b.Len() > maxDiffBytes {
			rest := 0
			for _, op := range ops[start:] {
				if op.kind != ' ' {
					rest++
				}
			}
			fmt.Fprintf(&b, "… (diff cut at %d bytes; %d more changed lines)\n", maxDiffBytes, rest)
			break
		}
		fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@\n", oldLine, oldN, newLine, newN)
		for _, op := range ops[start:stop] {
			if b.Len() > maxDiffBytes {
				break
			}
			b.WriteByte(op.kind)
			b.WriteString(op.text)
			if !strings.HasSuffix(op.text, "\n") {
				b.WriteString("\n\\ No newline at end of file\n")
			}
		}
		i = stop
	}
	return b.String()
}
