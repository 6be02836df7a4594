package policy

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestPairFilter: a literal whose first pair the set lacks is in none of
// the strings added, whatever the collisions.
func TestPairFilter(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alpha := "./aAeEgGnNvVtTsS_-é\xff"
	word := func(n int) string {
		var b strings.Builder
		for range rng.IntN(n) {
			b.WriteByte(alpha[rng.IntN(len(alpha))])
		}
		return b.String()
	}
	for range 20000 {
		s, lit := word(24), word(5)
		var ps pairSet
		ps.add(s)
		if ps.lacks(firstPair(lit)) && strings.Contains(s, lit) {
			t.Fatalf("%q holds %q, but the set lacks its first pair", s, lit)
		}
	}
}

// TestPairFilterExact compares every line of the default rules and some of
// every shape on tricky paths with and without the pair filter (match, a
// line alone; matches): same verdict, folded or not.
func TestPairFilterExact(t *testing.T) {
	var lines []*pathLine
	for _, d := range DefaultDeny() {
		r, err := compileRule(d.Rule)
		if err != nil {
			t.Fatal(err)
		}
		for i := range r.path.lines {
			lines = append(lines, &r.path.lines[i])
		}
	}
	for _, spec := range []string{"src/**", "/build/**", "//etc/**", "./a/*.go", "*.pem", "**/.ENV*", "a", "{x,Yz}/c*", "!**/.env.example", "é*/ß"} {
		pp, err := parsePathPattern(strings.TrimPrefix(spec, "!") + ", " + spec)
		if err != nil {
			t.Fatal(err)
		}
		for i := range pp.lines {
			lines = append(lines, &pp.lines[i])
		}
	}
	comps := []string{".git", "HOOKS", "hooks", ".Env", ".env.local", "id_rsa", ".ssh", "src", "a", "b", "..", ".", "", "é", "ß", "x.PEM", ".vscode", "settings.json", ".GitHub", "workflows", "ci.yml", "small.txt", "etc", "passwd", "Yz", "c1"}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, r := range []roots{newRoots(nil), newRoots([]string{"/workspace"}), newRoots([]string{"/tmp/Proj", "/srv/a"})} {
		for range 3000 {
			var b strings.Builder
			if rng.IntN(2) == 0 {
				b.WriteString("/")
			}
			for i := range 1 + rng.IntN(5) {
				if i > 0 {
					b.WriteString([]string{"/", "//", "/./"}[rng.IntN(3)])
				}
				b.WriteString(comps[rng.IntN(len(comps))])
			}
			loc := r.locate(b.String())
			for _, l := range lines {
				pp := &pathPattern{lines: []pathLine{*l}}
				pp.lines[0].neg = false
				for _, fold := range []bool{false, true} {
					if got, want := pp.match(&loc, fold), l.matches(&loc, fold); got != want {
						t.Fatalf("%q (fold %v) on %q: %v with the filter, %v without", l.pat, fold, b.String(), got, want)
					}
				}
			}
		}
	}
}
