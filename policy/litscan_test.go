package policy

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolgate/toolgate/tool"
)

// TestLitScan: the automaton finds a literal exactly when strings.Contains
// does, on literals that overlap (one inside, before or after another).
func TestLitScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	alpha := "ab./é\xff"
	word := func(lo, hi int) string {
		var b strings.Builder
		for range lo + rng.IntN(hi-lo+1) {
			b.WriteByte(alpha[rng.IntN(len(alpha))])
		}
		return b.String()
	}
	for range 3000 {
		lits := make([]string, 1+rng.IntN(6))
		for i := range lits {
			lits[i] = word(1, 5)
		}
		a := newLitScan(lits)
		for range 20 {
			s := word(0, 16)
			want := false
			for _, l := range lits {
				want = want || strings.Contains(s, l)
			}
			if got := a.holds(s); got != want {
				t.Fatalf("literals %q in %q: %v, want %v", lits, s, got, want)
			}
		}
	}
}

// TestRuleSetExact: a location the filter of a rule set rules out is
// matched by none of its path rules, and the first rule that catches a
// call is the one walking every rule finds, for the default lists and
// rules of every shape, for tools of each kind, on 9000+ tricky paths
// ("..", "//", "/./", case, unicode whose lower case changes length) under
// three sets of roots.
func TestRuleSetExact(t *testing.T) {
	custom := []string{"Read(src/**)", "Edit(/build/**)", "*(//etc/**)", "*(./a/*.go)", "Read(*.pem, !x.PEM)", "*(**/.ENV*, !**/.env.example)",
		"*(a)", "*({x,Yz}/c*)", "*(é*/ß)", "Bash(rm:*)", "WebFetch(domain:evil.test)", "read_*", "*(**/\u212Aey)"}
	lists := [][]string{Default().Deny, DefaultGuarded(), custom, append(custom[:4:4], "*(**)")}
	schema := func(props string) json.RawMessage {
		return json.RawMessage(`{"type":"object","properties":{` + props + `}}`)
	}
	defs := []tool.Definition{
		{Name: "read_text_file", InputSchema: schema(`"path":{"type":"string"}`), Annotations: tool.Annotations{ReadOnly: true}},
		{Name: "write_file", InputSchema: schema(`"path":{"type":"string"},"content":{"type":"string"}`), Level: tool.LevelWrite},
		{Name: "execute_command", InputSchema: schema(`"command":{"type":"string"}`), Level: tool.LevelMedium},
	}
	comps := []string{".git", "HOOKS", "hooks", "config", ".Config", ".Env", ".env.local", ".env.example", "id_RSA", ".ssh", "src", "a", "b", "..", ".", "", "é", "ß",
		"éa", "x.PEM", "y.pem", ".vscode", ".GitHub", "workflows", "action.yml", "Jenkinsfile", ".toolgate", "spill", ".aws", "etc", "passwd", "Yz", "c1", "x",
		"build", "İ", "\u212Aey", "key", "small.txt"}
	var compiled [][]*rule
	for _, l := range lists {
		var errs []error
		compiled = append(compiled, compileList(l, &errs, "test"))
		if len(errs) > 0 {
			t.Fatal(errs)
		}
	}
	rng := rand.New(rand.NewPCG(7, 8))
	out, in := 0, 0
	for _, r := range []roots{newRoots(nil), newRoots([]string{"/workspace"}), newRoots([]string{"/tmp/Proj", "/srv/a"})} {
		for range 3100 {
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
			p := b.String()
			loc := r.locate(p)
			for _, def := range defs {
				args, _ := json.Marshal(map[string]string{"path": p, "content": "x", "command": "cat '" + p + "'"})
				call := tool.Call{Name: def.Name, Args: args}
				info := analyzeDefinition(def)
				for li, l := range compiled {
					f := &facts{roots: r, def: def, call: call, info: info}
					rs := applicable(f, l)
					if rs.pathsOut([]location{loc}) {
						out++
						for _, ru := range rs.rules {
							if ru.kind == specPath && ru.path.match(&loc, true) {
								t.Fatalf("list %d, %s: %q is ruled out, but %s matches it", li, def.Name, p, ru.text)
							}
						}
					} else {
						in++
					}
					var want *rule
					g := &facts{roots: r, def: def, call: call, info: analyzeDefinition(def)}
					for _, ru := range l {
						if ru.catches(g) {
							want = ru
							break
						}
					}
					if got := firstCatch(f, l); got != want {
						t.Fatalf("list %d, %s(%s): %v with the filter, %v walking every rule", li, def.Name, args, got, want)
					}
				}
			}
		}
	}
	if out < 1000 || in < 1000 {
		t.Fatalf("%d locations ruled out, %d not: the paths do not test the filter", out, in)
	}
}

// TestHoldsFold: holdsFold is holds of strings.ToLower when it says ok,
// and says ok for every ASCII string; over strings of capitals, non-ASCII
// letters whose lower case is other bytes or ASCII (İ, the Kelvin sign,
// ẞ), and invalid UTF-8.
func TestHoldsFold(t *testing.T) {
	a := newLitScan([]string{".ssh", "id_rsa", ".env", "key", ".git/hooks", "ß", "i̇", ".pem"})
	parts := []string{"/", ".", "S", "s", "SSH", "ssh", ".SSH", "Id_RSA", "ID_", "rsa", ".ENV", "env", "K", "k", "EY", "ey", "\u212A", "İ", "I", "i", "ẞ", "ß", "\xff", "\xc3", ".GIT", "/HOOKS", ".Pem", "Ä", "ä", "x"}
	rng := rand.New(rand.NewPCG(9, 10))
	seen := map[[2]bool]int{}
	for range 200000 {
		var b strings.Builder
		for range rng.IntN(8) {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		s := b.String()
		held, ok := a.holdsFold(s)
		ascii := true
		for i := 0; i < len(s); i++ {
			ascii = ascii && s[i] < utf8.RuneSelf
		}
		if ascii && !ok {
			t.Fatalf("%q is ASCII, holdsFold is not ok", s)
		}
		if want := a.holds(strings.ToLower(s)); ok && held != want {
			t.Fatalf("%q: holdsFold %v, holds of its lower case %v", s, held, want)
		}
		seen[[2]bool{held, ok}]++
	}
	if len(seen) < 3 {
		t.Fatalf("cases seen: %v", seen)
	}
}

// TestPathsOutFold: a location with capitals or letters outside ASCII is
// ruled out by pathsOut exactly when its lower case holds none of the
// literals (pathsOut reads the lower case only when it must).
func TestPathsOutFold(t *testing.T) {
	rs := &ruleSet{lits: newLitScan([]string{".ssh", "key", "id"})}
	r := newRoots([]string{"/tmp/Proj"})
	for _, c := range []struct {
		p   string
		out bool
	}{
		{"/tmp/Proj/small.txt", true},
		{"/tmp/Proj/.SSH/x", false},
		{"/home/U/.Ssh", false},
		{"/tmp/Proj/\u212Aey", false}, // the Kelvin sign's lower case is "k"
		{"/tmp/Proj/KEY", false},
		{"/tmp/Proj/\u212A", true},
		{"/tmp/Proj/İD", false}, // İ is "i" in lower case
		{"/tmp/Proj/ID", false},
		{"/tmp/Proj/IX", true},
		{"/tmp/Proj/\xffIx/ſsh", true}, // ſ's lower case is itself
		{"/tmp/Proj/Äpfel/\xff", true},
		{"/tmp/Proj/Äpfel/.ssH", false},
		{"Rel/\u212AEY", false},
	} {
		loc := r.locate(c.p)
		if got := rs.pathsOut([]location{loc}); got != c.out {
			t.Errorf("%q: pathsOut %v, want %v", c.p, got, c.out)
		}
	}
}
