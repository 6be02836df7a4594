package policy

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
)

// pathPattern is the specifier of a path rule: one or more gitignore-style
// lines separated by commas (commas inside {…} belong to the glob). As in
// .gitignore:
//
//   - a pattern with no slash, or only a trailing one, matches at any depth
//     ("*.pem" matches "a/b/c.pem");
//   - a pattern with a slash at its start or in its middle is anchored to
//     the root ("/build/**" and "src/*.go" match only from the root);
//   - "**" matches any number of folders, "*" and "?" stay within a name,
//     [abc] and {a,b} are classes and alternatives;
//   - a pattern that matches a folder also matches everything in it; a
//     trailing "/" is accepted and means the same;
//   - a line starting with "!" takes a path matched by an earlier line back
//     out ("**/.env*, !**/.env.example"); the last line that matches wins.
//
// A pattern starting with "//" is an absolute path of this machine
// ("//etc/**"). Paths are compared after lexical cleaning; relative paths are
// taken from the first root, as the file tools do. Deny and ask rules
// ignore case (a case-insensitive file system must not let ".ENV" through);
// allow rules compare exactly.
type pathPattern struct {
	lines []pathLine
}

type pathLine struct {
	neg      bool
	abs      bool // matched against the absolute path
	anchored bool // only inside a root
	pat      string
	low      string
	// patDir and lowDir are pat and low followed by "/**": a pattern
	// naming a folder also matches everything in it.
	patDir, lowDir string
	// lit and litLow are a piece of text every matching path holds (the
	// longest literal run inside one segment of the pattern), checked
	// before the glob: most paths are ruled out by one strings.Contains.
	lit, litLow string
	// litPair and litLowPair are the pairKey of the first two bytes of lit
	// and litLow (-1 when shorter): a location whose pairs lack it does
	// not hold the literal.
	litPair, litLowPair int
}

func parsePathPattern(spec string) (*pathPattern, error) {
	pp := &pathPattern{}
	for _, raw := range splitTopCommas(spec) {
		s := strings.TrimSpace(raw)
		l := pathLine{}
		if strings.HasPrefix(s, "!") {
			l.neg, s = true, s[1:]
		}
		s = strings.TrimSuffix(s, "/")
		switch {
		case s == "":
			return nil, fmt.Errorf("empty path pattern in %q", spec)
		case strings.HasPrefix(s, "//"):
			l.abs, l.anchored, s = true, true, "/"+strings.TrimLeft(s, "/")
		case strings.HasPrefix(s, "/"):
			l.anchored, s = true, strings.TrimLeft(s, "/")
		case strings.HasPrefix(s, "./"):
			l.anchored, s = true, strings.TrimPrefix(s, "./")
		case strings.HasPrefix(s, "**/"):
			// any depth: also matches outside the roots
		case strings.Contains(s, "/"):
			l.anchored = true
		default:
			s = "**/" + s
		}
		if s == "" || s == "/" {
			s += "**"
		}
		if !doublestar.ValidatePattern(s) {
			return nil, fmt.Errorf("%q is not a valid glob", raw)
		}
		// One line per alternative of its {a,b} groups: each then has a
		// literal to rule paths out with (a negation of any undoes a match,
		// as the negation of the whole would).
		for _, alt := range expandBraces(s) {
			l.pat, l.low = alt, strings.ToLower(alt)
			l.patDir, l.lowDir = l.pat+"/**", l.low+"/**"
			l.lit, l.litLow = RequiredLiteral(l.pat), RequiredLiteral(l.low)
			l.litPair, l.litLowPair = firstPair(l.lit), firstPair(l.litLow)
			pp.lines = append(pp.lines, l)
		}
	}
	if len(pp.lines) == 0 || pp.lines[0].neg {
		return nil, fmt.Errorf("a path pattern must start with a pattern that is not negated (%q)", spec)
	}
	return pp, nil
}

// maxAlternatives bounds expandBraces.
const maxAlternatives = 64

// expandBraces returns the patterns that pat's {a,b} groups stand for,
// whose matches together are pat's, when every group lists plain names
// (no wildcard, separator, nested group or escape; not empty): the default
// rules' {yaml,yml,json} and {.vscode,.idea,…}. Otherwise, or past
// maxAlternatives, pat alone: the glob matcher has quirks at the edges of
// richer groups ("**{/}" does not match what "**/" does) that textual
// expansion would not keep.
func expandBraces(pat string) []string {
	if !strings.Contains(pat, "{") || strings.ContainsAny(pat, "[\\") || !utf8.ValidString(pat) {
		return []string{pat}
	}
	out := []string{""}
	for rest := pat; rest != ""; {
		open := strings.IndexByte(rest, '{')
		if open < 0 {
			for i := range out {
				out[i] += rest
			}
			break
		}
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return []string{pat}
		}
		end += open
		alts := strings.Split(rest[open+1:end], ",")
		if len(out)*len(alts) > maxAlternatives {
			return []string{pat}
		}
		var next []string
		for _, o := range out {
			for _, a := range alts {
				if a == "" || strings.ContainsAny(a, "*?/{}") {
					return []string{pat}
				}
				next = append(next, o+rest[:open]+a)
			}
		}
		out, rest = next, rest[end+1:]
	}
	return out
}

// RequiredLiteral returns the longest run of plain characters of a
// doublestar pattern that lies inside one path segment and outside braces
// and brackets: every path the pattern matches holds it, so a path without
// it need not be matched at all. A run is cut at "/", since "**/" also
// matches nothing at all, and at every wildcard or escape. "" when there
// is none.
func RequiredLiteral(pat string) string {
	if !utf8.ValidString(pat) || strings.ContainsRune(pat, utf8.RuneError) {
		return "" // the glob matches U+FFFD with any invalid byte: no literal is required
	}
	best, start, depth := "", -1, 0
	end := func(i int) {
		if start >= 0 && i-start > len(best) {
			best = pat[start:i]
		}
		start = -1
	}
	for i := 0; i < len(pat); i++ {
		switch c := pat[i]; {
		case c == '\\':
			end(i)
			i++ // the escaped character is literal, but keep it simple: skip it
		case c == '{' || c == '[':
			end(i)
			depth++
		case c == '}' || c == ']':
			end(i)
			depth = max(depth-1, 0)
		case c == '*' || c == '?' || c == '/' || depth > 0:
			end(i)
		default:
			if start < 0 {
				start = i
			}
		}
	}
	end(len(pat))
	return best
}

// splitTopCommas splits s at commas outside braces and brackets.
func splitTopCommas(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '{', '[':
			depth++
		case '}', ']':
			if depth > 0 {
				depth--
			}
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// location is a path resolved against the roots, lexically.
type location struct {
	rel    string // slash-separated, relative to its root ("." for the root); "" when outside every root
	abs    string // slash-separated absolute path; "" when unknown (a relative path without roots)
	inside bool
	// relLow and absLow are rel and abs in lower case, made (lowDone) the
	// first time a rule that ignores case needs them (lower): a path with
	// a capital would allocate its lower case, most calls need none
	// (pathsOut rules most locations out without it).
	relLow, absLow string
	lowDone        bool
	// pairs holds every pair of adjacent bytes of the four, so that most
	// lines are ruled out without looking for their literal; made at the
	// first line matched (pairsDone), as most locations meet none (a rule
	// set's literals rule them out first).
	pairs     pairSet
	pairsDone bool
}

func newLocation(rel, abs string, inside bool) location {
	return location{rel: rel, abs: abs, inside: inside}
}

// lower returns rel and abs in lower case (strings.ToLower), made the
// first time.
func (loc *location) lower() (rel, abs string) {
	if !loc.lowDone {
		loc.lowDone = true
		loc.relLow, loc.absLow = strings.ToLower(loc.rel), strings.ToLower(loc.abs)
	}
	return loc.relLow, loc.absLow
}

// pairSet returns loc's pairs, making them the first time.
func (loc *location) pairSet() *pairSet {
	if !loc.pairsDone {
		loc.pairsDone = true
		relLow, absLow := loc.lower()
		loc.pairs.add(loc.abs)
		if absLow != loc.abs {
			loc.pairs.add(absLow)
		}
		if !strings.HasSuffix(loc.abs, loc.rel) {
			loc.pairs.add(loc.rel)
		}
		if !strings.HasSuffix(absLow, relLow) {
			loc.pairs.add(relLow)
		}
	}
	return &loc.pairs
}

// pairSet is a filter of the pairs of adjacent bytes of some strings: a
// pair it lacks is in none of them (a pair it has may be in none: keys
// collide).
type pairSet [pairKeys / 64]uint64

const pairKeys = 1024

func pairKey(a, b byte) uint { return (uint(a)*131 + uint(b)) % pairKeys }

// firstPair is the key of the first two bytes of s, -1 when it has fewer.
func firstPair(s string) int {
	if len(s) < 2 {
		return -1
	}
	return int(pairKey(s[0], s[1]))
}

func (ps *pairSet) add(s string) {
	for i := 1; i < len(s); i++ {
		k := pairKey(s[i-1], s[i])
		ps[k/64%uint(len(ps))] |= 1 << (k % 64)
	}
}

// lacks reports whether the pair with key k (-1: none) is in none of the
// strings added.
func (ps *pairSet) lacks(k int) bool { return k >= 0 && ps[k/64]&(1<<(k%64)) == 0 }

// match reports whether loc is matched (fold: ignore case).
func (pp *pathPattern) match(loc *location, fold bool) bool {
	matched := false
	pairs := loc.pairSet()
	for i := range pp.lines {
		l := &pp.lines[i]
		if l.neg != matched {
			continue // only a negation can undo a match, only a pattern can make one
		}
		litPair := l.litPair
		if fold {
			litPair = l.litLowPair
		}
		if pairs.lacks(litPair) {
			continue // the path does not hold the line's literal
		}
		if l.matches(loc, fold) {
			matched = !l.neg
		}
	}
	return matched
}

func (l *pathLine) matches(loc *location, fold bool) bool {
	pat, patDir, lit := l.pat, l.patDir, l.lit
	rel, abs := loc.rel, loc.abs
	if fold {
		pat, patDir, lit = l.low, l.lowDir, l.litLow
		rel, abs = loc.lower()
	}
	var target string
	switch {
	case l.abs:
		target = abs
	case loc.inside:
		target = rel
	case !l.anchored && abs != "":
		target = strings.TrimPrefix(abs, "/")
	case !l.anchored:
		target = rel
	default:
		return false
	}
	if target == "" {
		return false
	}
	if !strings.Contains(target, lit) {
		return false
	}
	return doublestar.MatchUnvalidated(pat, target) || doublestar.MatchUnvalidated(patDir, target)
}

// roots is the set of folders paths are resolved against.
type roots struct {
	dirs [][]string // components of each root (and of its real path, when it differs)
	list []string   // absolute, slash-separated; list[0] resolves relative paths
}

func newRoots(dirs []string) roots {
	var r roots
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			continue
		}
		r.list = append(r.list, filepath.ToSlash(abs))
		r.dirs = append(r.dirs, splitComponents(filepath.ToSlash(abs)))
		if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
			r.list = append(r.list, filepath.ToSlash(real))
			r.dirs = append(r.dirs, splitComponents(filepath.ToSlash(real)))
		}
	}
	return r
}

func splitComponents(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}

// locate resolves p (exactly the bytes given) the way the file tools do:
// relative to the first root, or an absolute path inside one, compared
// component by component. Resolution is lexical: the file tools resolve
// symbolic links and check again.
func (r roots) locate(p string) location {
	p = filepath.ToSlash(p)
	if p == "" {
		p = "."
	}
	if !strings.HasPrefix(p, "/") && !filepath.IsAbs(filepath.FromSlash(p)) {
		rel := cleanPath(p)
		escapes := rel == ".." || strings.HasPrefix(rel, "../")
		if len(r.list) == 0 {
			return newLocation(rel, "", !escapes)
		}
		abs := cleanPath(r.list[0] + "/" + rel)
		if escapes {
			return r.locateAbs(abs)
		}
		return newLocation(rel, abs, true)
	}
	return r.locateAbs(cleanPath(p))
}

// cleanPath is path.Clean(p): p itself when isClean says so (most paths a
// call names are clean already), else path.Clean's answer.
func cleanPath(p string) string {
	if isClean(p) {
		return p
	}
	return path.Clean(p)
}

// isClean reports whether path.Clean(p) is p: "/" or "."; else names
// separated by single slashes, no trailing slash, no "." and no ".."
// except leading ones of a relative path. False when in doubt.
func isClean(p string) bool {
	if p == "/" || p == "." {
		return true
	}
	i, lead := 0, true // lead: only ".." seen so far in a relative path
	if p != "" && p[0] == '/' {
		i, lead = 1, false
	}
	for i < len(p) {
		j := i
		for j < len(p) && p[j] != '/' {
			j++
		}
		switch p[i:j] {
		case "", ".":
			return false
		case "..":
			if !lead {
				return false
			}
		default:
			lead = false
		}
		if j == len(p) {
			return true
		}
		i = j + 1
	}
	return false // "" or a trailing slash
}

// locateAbs places abs, an absolute path that path.Clean leaves as it is.
func (r roots) locateAbs(abs string) location {
	for _, rp := range r.dirs {
		if rel, ok := below(abs, rp); ok {
			return newLocation(rel, abs, true)
		}
	}
	return newLocation("", abs, false)
}

// below returns the path of abs (absolute and clean) relative to the
// folder whose components are dir, compared component by component ("."
// for the folder itself); false when abs is not inside it.
func below(abs string, dir []string) (string, bool) {
	rest := abs
	for _, c := range dir {
		if len(rest) <= len(c) || rest[0] != '/' || rest[1:1+len(c)] != c {
			return "", false
		}
		rest = rest[1+len(c):]
		if rest != "" && rest[0] != '/' {
			return "", false // a longer name
		}
	}
	if rest == "" || rest == "/" {
		return ".", true
	}
	return rest[1:], true
}

// patchPaths returns the files a patch names: apply_patch envelopes
// ("*** Update File: x") and unified diff headers ("+++ b/x").
func patchPaths(patch string) []string {
	var out []string
	heads := []string{"*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "}
	if !strings.Contains(patch, "*** Begin Patch") {
		heads = append(heads, "--- ", "+++ ")
	}
	for _, line := range strings.Split(patch, "\n") {
		line = strings.TrimRight(line, "\r")
		for _, h := range heads {
			if !strings.HasPrefix(line, h) {
				continue
			}
			p := strings.TrimSpace(line[len(h):])
			if h == "--- " || h == "+++ " {
				if i := strings.IndexByte(p, '\t'); i >= 0 {
					p = p[:i]
				}
				if p == "/dev/null" {
					continue
				}
				if strings.HasPrefix(p, "a/") || strings.HasPrefix(p, "b/") {
					p = p[2:]
				}
			}
			if p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}
