package policy

import (
	"path"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolgate/toolgate/tool"
)

func TestGlobMapDecides(t *testing.T) {
	// The example policy's own maps are among these (see
	// TestExamplePolicyGlobMaps for the file itself).
	cases := []struct {
		name  string
		globs []string
		want  map[string]string // tool → deciding key ("" none)
	}{
		{"star beside names", []string{"*", "read_file", "github__*"}, map[string]string{
			"read_file": "read_file", "github__create_issue": "github__*", "write_file": "*", "": "*",
		}},
		{"exact beats every glob", []string{"read_*", "read_file", "read_fil?", "*"}, map[string]string{
			"read_file": "read_file", "read_files": "read_*", "read_filx": "read_fil?", "read": "*",
		}},
		{"more literals win", []string{"github__*", "github__create_*", "*__create_issue", "*"}, map[string]string{
			"github__create_pr":    "github__create_*",
			"github__create_issue": "github__create_*", // 15 literals against 14
			"gitlab__create_issue": "*__create_issue",
			"github__list":         "github__*",
			"x":                    "*",
		}},
		{"then fewer wildcards", []string{"a*b*c", "a*bc", "*"}, map[string]string{
			"abc": "a*bc", "axbc": "a*bc", "axbyc": "a*b*c", "zz": "*",
		}},
		{"sorted order does not decide", []string{"*", "a*", "ab*"}, map[string]string{
			"abc": "ab*", "acd": "a*", "bcd": "*",
		}},
		{"question marks and classes", []string{"fs__[rw]*", "fs__*", "fs__?ead_file"}, map[string]string{
			"fs__read_file": "fs__?ead_file", "fs__list": "fs__*",
			"fs__write_file": "fs__*", // a class is a wildcard: 4 literals and 1 wildcard beat 4 and 2
		}},
		{"no star, no default", []string{"fs__*"}, map[string]string{"read_file": "", "fs__x": "fs__*"}},
		{"escaped star is a name", []string{`a\*`, "a*"}, map[string]string{"a*": `a\*`, "ab": "a*"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := map[string]string{}
			for _, g := range c.globs {
				m[g] = g
			}
			gm, err := NewGlobMap("test", m)
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range c.want {
				v, key, ok := gm.Lookup(name)
				if ok != (want != "") || key != want || v != want {
					t.Errorf("Lookup(%q) = %q from %q (%v), want %q", name, v, key, ok, want)
				}
				if ok && key != name {
					if m, _ := path.Match(key, name); !m {
						t.Errorf("%q decided for %q but does not match it", key, name)
					}
				}
			}
		})
	}
}

func TestGlobMapTies(t *testing.T) {
	for _, c := range []struct {
		globs []string
		tie   bool
	}{
		{[]string{"github__*", "*__issue"}, false},      // 8 and 7 literals
		{[]string{"github__*", "gitlab__*"}, false},     // same rank, but no name matches both
		{[]string{"read_*", "*_file"}, true},            // read_file matches both
		{[]string{"a?c", "ab?"}, true},                  // abc
		{[]string{"a[xy]c", "a[yz]c"}, true},            // ayc
		{[]string{"a[x]c", "a[z]c"}, false},             // disjoint classes
		{[]string{"a[^x]c", "a[x]c"}, false},            // a class and its complement
		{[]string{"*", "**"}, true},                     // both the default
		{[]string{"*", "?"}, false},                     // "*" is below every other glob
		{[]string{"x*y", "*xy"}, true},                  // xy
		{[]string{"fs__*_file", "fs__read_*"}, true},    // 9 literals each: fs__read_file
		{[]string{"[a-c]*", "[c-e]*"}, true},            // c
		{[]string{"[a-c]x*", "[d-e]x*"}, false},         //
		{[]string{"mcp_*_list", "mcp_list_*"}, true},    // mcp_list_list
		{[]string{"a*", "b*", "c*", "d*", "e*"}, false}, //
		{[]string{`\**`, "**"}, false},                  // "**" is the default
		{[]string{`[\]]*`, `\]*`}, false},               // 0 and 1 literals
		{[]string{`[\]]x`, `[\]y]x`}, true},             // "]x"
		{[]string{"é*", "*é"}, true},                    // é
		{[]string{"*a*", "*b*"}, true},                  // ab
		{[]string{"?a", "a?"}, true},                    // aa
		{[]string{"??", "a*"}, false},                   // 0 and 1 literals
		{[]string{"*_x", "y_*"}, true},                  // y_x
		{[]string{"*_x", "y_*", "y_x"}, true},           // the exact name does not settle y_xx_x
		{[]string{"[^a]", "[^b]"}, true},                // c
		{[]string{"ab", `a\b`}, true},                   // one name spelled twice
		{[]string{"*" + strings.Repeat("a", 40), "?b"}, false},
	} {
		m := map[string]int{}
		for i, g := range c.globs {
			m[g] = i
		}
		_, err := NewGlobMap("limits.tools", m)
		if (err != nil) != c.tie {
			t.Errorf("%q: err %v, want a tie: %v", c.globs, err, c.tie)
			continue
		}
		if err != nil {
			for _, g := range c.globs[:2] {
				if !strings.Contains(err.Error(), `"`+strings.ReplaceAll(g, `\`, `\\`)+`"`) {
					t.Errorf("%q: the error %q does not name %q", c.globs, err, g)
				}
			}
			if !strings.HasPrefix(err.Error(), "limits.tools") {
				t.Errorf("the error %q does not name the map", err)
			}
		}
	}
}

// TestGlobMapWitness checks that the name a tie error gives matches both
// globs.
func TestGlobMapWitness(t *testing.T) {
	pairs := [][2]string{{"read_*", "*_file"}, {"a?c", "ab?"}, {"x*y", "*xy"}, {"*a*", "*b*"}, {"[^a]", "[^b]"}, {"mcp_*_list", "mcp_list_*"}}
	for _, p := range pairs {
		w, ok := commonMatch(p[0], p[1])
		if !ok {
			t.Fatalf("%q: no common name found", p)
		}
		for _, g := range p {
			if m, _ := path.Match(g, w); !m {
				t.Errorf("%q: %q does not match %q", p, g, w)
			}
		}
	}
}

func TestGlobMapRefusesBadGlobs(t *testing.T) {
	if _, err := NewGlobMap("output.tools", map[string]int{"[": 1}); err == nil || !strings.Contains(err.Error(), `output.tools "["`) {
		t.Errorf("err = %v", err)
	}
}

func FuzzGlobMapWitness(f *testing.F) {
	f.Add("read_*", "*_file")
	f.Add("a[b-d]?", "?c*")
	f.Add(`\[*`, "[[]x")
	f.Fuzz(func(t *testing.T, a, b string) {
		if _, err := path.Match(a, ""); err != nil {
			return
		}
		if _, err := path.Match(b, ""); err != nil {
			return
		}
		if !utf8.ValidString(a) || !utf8.ValidString(b) {
			return // NewGlobMap refuses them
		}
		w, ok := commonMatch(a, b)
		if !ok {
			// No name matches both: none of the short names over the
			// globs' own characters does.
			alphabet := []rune{'z'}
			for _, r := range a + b {
				if !slices.Contains(alphabet, r) && r != '/' && len(alphabet) < 6 {
					alphabet = append(alphabet, r)
				}
			}
			var try func(name []rune)
			try = func(name []rune) {
				ma, _ := path.Match(a, string(name))
				mb, _ := path.Match(b, string(name))
				if ma && mb {
					t.Fatalf("%q and %q both match %q, but commonMatch found no name", a, b, string(name))
				}
				if len(name) < 4 {
					for _, r := range alphabet {
						try(append(name, r))
					}
				}
			}
			try(nil)
			return
		}
		for _, g := range []string{a, b} {
			if m, _ := path.Match(g, w); !m {
				t.Errorf("%q and %q: %q does not match %q", a, b, g, w)
			}
		}
	})
}

// TestExamplePolicyGlobMaps: the example policy's own maps decide by the
// rule: its "github__*" limit is no longer shadowed by its "*".
func TestExamplePolicyGlobMaps(t *testing.T) {
	p, err := Load("testdata/toolgate.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{ // map → tool → deciding key
		"limits.tools":          {"github__create_issue": "github__*", "read_file": "*", "github": "*"},
		"limits.tool_principal": {"execute_command": "execute_*", "read_file": ""},
		"output.tools":          {"read_file": "read_file", "read_files": ""},
		"auth.tool_scopes":      {"execute_command": "execute_*", "write_file": ""},
	}
	seen := 0
	for _, m := range p.GlobSettings() {
		tools, ok := want[m.Field]
		if !ok {
			continue
		}
		seen++
		for name, key := range tools {
			got, _, ok := m.Decide(name)
			if got != key || ok != (key != "") {
				t.Errorf("%s: %s decided by %q, want %q", m.Field, name, got, key)
			}
		}
	}
	if seen != len(want) {
		t.Errorf("%d of the %d maps reported", seen, len(want))
	}
}

// TestLimiterGlobRule: a Limiter takes each tool's bucket by the rule, so
// a specific limit beside "*" holds.
func TestLimiterGlobRule(t *testing.T) {
	l := NewLimiter(LimitConfig{
		Tools: map[string]Rate{
			"read_file":  {PerSecond: 0.001, Burst: 3},
			"github__*":  {PerSecond: 0.001, Burst: 2},
			"*":          {PerSecond: 1000, Burst: 1000},
			"write_file": {}, // no limit, though "*" has one
		},
		Loop: LoopConfig{Off: true},
	})
	for name, want := range map[string]int{"read_file": 3, "github__x": 2, "edit_file": 1000, "write_file": 50} {
		ran := 0
		for range 50 {
			if release, err := l.Acquire(t.Context(), tool.Call{Name: name}, tool.Definition{Name: name}); err == nil {
				release(tool.Result{})
				ran++
			}
		}
		if want > 50 {
			want = 50
		}
		if ran != want {
			t.Errorf("%s: %d of 50 calls ran, want %d", name, ran, want)
		}
	}
	bad := NewLimiter(LimitConfig{Tools: map[string]Rate{"read_*": {1, 1}, "*_file": {1, 1}}})
	if _, err := bad.Acquire(t.Context(), tool.Call{Name: "x"}, tool.Definition{Name: "x"}); err == nil || !strings.Contains(err.Message, `"*_file" and "read_*"`) {
		t.Errorf("a Limiter whose globs tie must refuse every call naming both: %v", err)
	}
}
