package policy

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode/utf8"
)

// GlobMap maps tool-name globs (path.Match syntax) to a setting, and
// decides by the one rule every such map of a policy follows:
//
//   - a name written out (no wildcard) beats every glob;
//   - among globs, the most specific wins: more literal characters, then
//     fewer wildcards (each *, ? and [class] is one);
//   - "*" (a glob of stars only) applies only where nothing else matches.
//
// Two globs of the same rank that can match one name are refused when the
// map is made (NewGlobMap's error names both): which of them decides
// would otherwise be an accident of spelling. The order of the map's keys
// never matters.
type GlobMap[V any] struct {
	exact map[string]ranked[V] // by the name the key spells
	globs []ranked[V]          // most specific first
}

type ranked[V any] struct {
	glob  string
	value V
	rank  globRank
}

// globRank orders globs from the most specific: literal characters (more
// first), then wildcards (fewer first); a glob of stars only is last.
type globRank struct {
	starsOnly bool
	literals  int
	wildcards int
}

func (a globRank) compare(b globRank) int {
	if a.starsOnly != b.starsOnly {
		if a.starsOnly {
			return 1
		}
		return -1
	}
	if c := cmp.Compare(b.literals, a.literals); c != 0 {
		return c
	}
	return cmp.Compare(a.wildcards, b.wildcards)
}

// NewGlobMap returns m as a GlobMap. field names the map in errors
// ("limits.tools"). It refuses a key that is not a glob and two globs of
// the same rank that can match the same name.
func NewGlobMap[V any](field string, m map[string]V) (GlobMap[V], error) {
	g := GlobMap[V]{}
	for k, v := range m {
		toks, err := globTokens(k)
		if err != nil {
			return GlobMap[V]{}, fmt.Errorf("%s %q: not a tool glob: %v", field, k, err)
		}
		if !hasWildcard(toks) {
			if g.exact == nil {
				g.exact = map[string]ranked[V]{}
			}
			name := unescape(toks)
			if other, ok := g.exact[name]; ok {
				return GlobMap[V]{}, fmt.Errorf("%s: %q and %q both name %q: keep one", field, other.glob, k, name)
			}
			g.exact[name] = ranked[V]{glob: k, value: v}
			continue
		}
		g.globs = append(g.globs, ranked[V]{glob: k, value: v, rank: rankOf(toks)})
	}
	slices.SortFunc(g.globs, func(a, b ranked[V]) int {
		if c := a.rank.compare(b.rank); c != 0 {
			return c
		}
		return strings.Compare(a.glob, b.glob)
	})
	for i := 0; i < len(g.globs); i++ {
		for j := i + 1; j < len(g.globs) && g.globs[j].rank == g.globs[i].rank; j++ {
			a, b := g.globs[i].glob, g.globs[j].glob
			if w, ok := commonMatch(a, b); ok {
				return GlobMap[V]{}, fmt.Errorf("%s: %q and %q are equally specific and both match %q, so neither may decide: make one more specific, or name the tool exactly", field, a, b, w)
			}
		}
	}
	return g, nil
}

// Lookup returns the setting that decides for the tool name, the key
// (glob or name) it came from, and whether any key matches.
func (g GlobMap[V]) Lookup(name string) (V, string, bool) {
	if r, ok := g.exact[name]; ok {
		return r.value, r.glob, true
	}
	for _, r := range g.globs {
		if ok, _ := path.Match(r.glob, name); ok {
			return r.value, r.glob, true
		}
	}
	var zero V
	return zero, "", false
}

// Len is the number of keys.
func (g GlobMap[V]) Len() int { return len(g.exact) + len(g.globs) }

// A glob is a sequence of tokens: a literal character, ? (any one), a
// class [..] (one of a set) or * (any run).
type globTok struct {
	kind   byte // 'c' literal, '?' any, '[' class, '*' star
	r      rune
	negate bool
	ranges [][2]rune // a class's ranges (a single character is lo == hi)
}

func (t globTok) wildcard() bool { return t.kind != 'c' }

// globTokens parses a glob in path.Match's syntax.
func globTokens(g string) ([]globTok, error) {
	if _, err := path.Match(g, ""); err != nil {
		return nil, err
	}
	if !utf8.ValidString(g) {
		return nil, fmt.Errorf("not UTF-8")
	}
	var out []globTok
	for i := 0; i < len(g); {
		switch c := g[i]; c {
		case '*':
			i++
			if len(out) > 0 && out[len(out)-1].kind == '*' {
				continue // ** is *
			}
			out = append(out, globTok{kind: '*'})
		case '?':
			i++
			out = append(out, globTok{kind: '?'})
		case '[':
			t := globTok{kind: '['}
			i++
			if i < len(g) && g[i] == '^' {
				t.negate = true
				i++
			}
			for i < len(g) && g[i] != ']' {
				lo, n := classChar(g[i:])
				i += n
				hi := lo
				if i+1 < len(g) && g[i] == '-' && g[i+1] != ']' {
					hi, n = classChar(g[i+1:])
					i += 1 + n
				}
				t.ranges = append(t.ranges, [2]rune{lo, hi})
			}
			i++ // ]
			out = append(out, t)
		case '\\':
			r, n := utf8.DecodeRuneInString(g[i+1:])
			i += 1 + n
			out = append(out, globTok{kind: 'c', r: r})
		default:
			r, n := utf8.DecodeRuneInString(g[i:])
			i += n
			out = append(out, globTok{kind: 'c', r: r})
		}
	}
	return out, nil
}

// classChar reads one (maybe escaped) character of a class.
func classChar(s string) (rune, int) {
	if s[0] == '\\' && len(s) > 1 {
		r, n := utf8.DecodeRuneInString(s[1:])
		return r, 1 + n
	}
	r, n := utf8.DecodeRuneInString(s)
	return r, n
}

func hasWildcard(toks []globTok) bool {
	return slices.ContainsFunc(toks, globTok.wildcard)
}

func unescape(toks []globTok) string {
	var b strings.Builder
	for _, t := range toks {
		b.WriteRune(t.r)
	}
	return b.String()
}

func rankOf(toks []globTok) globRank {
	r := globRank{starsOnly: true}
	for _, t := range toks {
		if t.kind != '*' {
			r.starsOnly = false
		}
		if t.wildcard() {
			r.wildcards++
		} else {
			r.literals++
		}
	}
	return r
}

// commonMatch reports whether some name matches both globs, and returns
// one such name. It walks the two globs side by side: a state is a
// position in each, and the walk reaches the end of both exactly when
// the two languages meet.
func commonMatch(a, b string) (string, bool) {
	p, _ := globTokens(a)
	q, _ := globTokens(b)
	type state struct{ i, j int }
	type step struct {
		from state
		r    rune
		eps  bool
	}
	seen := map[state]step{{0, 0}: {}}
	queue := []state{{0, 0}}
	visit := func(s state, how step) {
		if _, ok := seen[s]; !ok {
			seen[s] = how
			queue = append(queue, s)
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if s.i == len(p) && s.j == len(q) {
			var name []rune
			for s != (state{0, 0}) {
				how := seen[s]
				if !how.eps {
					name = append(name, how.r)
				}
				s = how.from
			}
			slices.Reverse(name)
			return string(name), true
		}
		// A star may match nothing.
		if s.i < len(p) && p[s.i].kind == '*' {
			visit(state{s.i + 1, s.j}, step{from: s, eps: true})
		}
		if s.j < len(q) && q[s.j].kind == '*' {
			visit(state{s.i, s.j + 1}, step{from: s, eps: true})
		}
		// Or both take one character.
		if s.i == len(p) || s.j == len(q) {
			continue
		}
		tp, tq := p[s.i], q[s.j]
		if tp.kind == '*' && tq.kind == '*' {
			continue // both stay: no progress
		}
		r, ok := commonRune(tp, tq)
		if !ok {
			continue
		}
		next := state{s.i + 1, s.j + 1}
		if tp.kind == '*' {
			next.i = s.i
		}
		if tq.kind == '*' {
			next.j = s.j
		}
		visit(next, step{from: s, r: r})
	}
	return "", false
}

// commonRune returns a character both tokens take, if there is one.
func commonRune(a, b globTok) (rune, bool) {
	// If any character satisfies both, one of these does: the literals,
	// the ends of every range and their neighbours, or a character no
	// token names.
	cands := []rune{'a', '_', 0x10fffd}
	for _, t := range []globTok{a, b} {
		if t.kind == 'c' {
			cands = append(cands, t.r)
		}
		for _, rg := range t.ranges {
			cands = append(cands, rg[0], rg[1], rg[0]-1, rg[1]+1)
		}
	}
	for _, r := range cands {
		if r >= 0 && r != '/' && takes(a, r) && takes(b, r) {
			return r, true
		}
	}
	return 0, false
}

// takes reports whether a token matches the character r (a star takes
// any character but '/', as in path.Match).
func takes(t globTok, r rune) bool {
	switch t.kind {
	case 'c':
		return t.r == r
	case '[':
		in := false
		for _, rg := range t.ranges {
			if rg[0] <= r && r <= rg[1] {
				in = true
				break
			}
		}
		return in != t.negate && r != '/'
	}
	return r != '/'
}

// GlobSetting is one map of a policy from tool-name globs to a setting,
// for reports (toolgate policy check): Decide names the key that decides
// for a tool and the setting it gives, as the policy applies it.
type GlobSetting struct {
	Field     string // "limits.tools"
	Otherwise string // what holds for a tool no key decides
	Decide    func(name string) (key, setting string, ok bool)
}

// GlobSettings returns the policy's glob maps that are not empty, in the
// order of the file's sections.
func (p *Policy) GlobSettings() []GlobSetting {
	var out []GlobSetting
	add := func(field, otherwise string, m map[string]string) {
		if len(m) == 0 {
			return
		}
		gm, err := NewGlobMap(field, m)
		if err != nil {
			return // a loaded policy has none: Load refuses ties
		}
		out = append(out, GlobSetting{Field: field, Otherwise: otherwise, Decide: func(name string) (string, string, bool) {
			v, k, ok := gm.Lookup(name)
			return k, v, ok
		}})
	}
	rates := func(m map[string]Rate) map[string]string {
		out := map[string]string{}
		for g, r := range m {
			out[g] = r.describe()
		}
		return out
	}
	add("limits.tools", "no limit", rates(p.Limits.Tools))
	add("limits.tool_principal", "no limit", rates(p.Limits.ToolPrincipal))
	budgets := map[string]string{}
	for g, n := range p.Output.Tools {
		budgets[g] = fmt.Sprintf("%d bytes", n)
	}
	max := "the engine's default"
	if p.Output.MaxBytes != 0 {
		max = fmt.Sprintf("%d bytes", p.Output.MaxBytes)
	}
	add("output.tools", "output.max_bytes: "+max, budgets)
	if p.Auth != nil {
		add("auth.tool_scopes", "no scope beyond auth.scopes", p.Auth.ToolScopes)
	}
	results := map[string]string{}
	for g, a := range p.Trust.ResultsTools {
		results[g] = string(a)
	}
	add("trust.results_tools", "trust.results: "+string(p.Trust.ResultMode()), results)
	return out
}
