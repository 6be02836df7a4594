package fs

import (
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/toolgate/toolgate/tool"
)

// Bounds on a glob, checked before its {a,b} groups are expanded, so that
// checking any glob costs at most about maxGlobExpansion bytes of work.
const (
	maxGlobAlternatives = 1024    // patterns its {a,b} groups spell
	maxGlobGroups       = 64      // {a,b} groups, nested ones included
	maxGlobDepth        = 32      // groups inside groups
	maxGlobExpansion    = 1 << 20 // bytes written while expanding
)

// confineGlob checks a glob argument of search_files (arg is its name:
// "glob", or "pattern" for target=files) that is matched against the paths
// inside the folder base, and returns the glob to use.
//
// A glob can only match paths inside the searched folder (it is matched
// inside the root), so one that names a place elsewhere would silently
// match nothing; it is refused with invalid_arguments naming the argument
// instead. Refused, in any of the alternatives its {a,b} groups spell,
// escaped or not: a ".." segment (also "\.\.", "[.][.]", and Windows'
// "..\"), an absolute pattern ("/…", "\…", "C:\…", "file:…") outside the
// searched folder, and a leading "~" or variable ($HOME, ${HOME},
// %USERPROFILE%), which are never expanded. An absolute pattern inside the
// searched folder is made relative to it ("/ws/src/**/*.go" searching /ws
// becomes "src/**/*.go"); a leading "./" is dropped. A glob longer than a
// path (MaxPathBytes), or whose groups are too many, too deeply nested or
// spell too many alternatives, is refused before anything is expanded.
func (s *Set) confineGlob(arg, glob string, base Location) (string, error) {
	if glob == "" {
		return "", nil
	}
	fail := func(format string, args ...any) error {
		return tool.Errorf(tool.InvalidArguments, "%s %q "+format, append([]any{arg, glob}, args...)...).
			WithSuggestion("write %s relative to the searched folder (e.g. \"**/*.go\" or \"src/**/*.ts\"); to search somewhere else, set path to that folder inside the workspace", arg).
			WithDetail("argument", arg)
	}
	tooBig := func(format string, args ...any) error {
		return tool.Errorf(tool.InvalidArguments, "%s "+format, append([]any{arg}, args...)...).
			WithSuggestion("use fewer or smaller {a,b} groups, or several searches").
			WithDetail("argument", arg)
	}
	if len(glob) > MaxPathBytes {
		return "", tooBig("is %d bytes long; at most %d are allowed", len(glob), MaxPathBytes)
	}
	if groups, depth := braceShape(glob); groups > maxGlobGroups || depth > maxGlobDepth {
		return "", tooBig("has %d {a,b} groups nested %d deep; at most %d groups nested %d deep are allowed", groups, depth, maxGlobGroups, maxGlobDepth)
	}
	if strings.HasPrefix(glob, "/") {
		rel, ok := s.relativeGlob(glob, base)
		if !ok {
			if _, _, _, err := s.roots.pick(literalPrefix(glob)); err != nil {
				return "", fail("is an absolute pattern outside the workspace roots; it could match nothing")
			}
			return "", fail("is an absolute pattern outside the searched folder %q; it could match nothing", base.display())
		}
		glob = rel
	}
	alts, ok := braceAlternatives(glob, maxGlobAlternatives, maxGlobExpansion)
	if !ok {
		return "", tooBig("spells too many alternatives with its {a,b} groups: at most %d, of %d bytes in all, are allowed", maxGlobAlternatives, maxGlobExpansion)
	}
	for _, a := range alts {
		switch first, _, _ := strings.Cut(unescape(a), "/"); {
		case climbs(a) || hasDotDotSegment(a):
			return "", fail("climbs out of the searched folder with \"..\"; it can only match paths inside it")
		case isAbsGlob(a):
			return "", fail("holds an absolute pattern (%q); it could match nothing inside the searched folder", a)
		case strings.HasPrefix(first, "~") && (first == "~" || strings.Contains(a, "/")):
			return "", fail("starts with \"~\", which is not expanded: it names no folder of the workspace")
		case variable().MatchString(first):
			return "", fail("starts with the variable %q, which is not expanded: it names no folder of the workspace", first)
		}
	}
	for strings.HasPrefix(glob, "./") {
		glob = strings.TrimLeft(glob[2:], "/")
	}
	if glob == "" {
		// "./" or the searched folder's own absolute path: the folder
		// itself, which no file under it is; "" would mean no glob at all.
		glob = "."
	}
	return glob, nil
}

// variable is a whole path segment that names a variable: $HOME, ${HOME},
// %USERPROFILE%.
var variable = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(\$[A-Za-z_][A-Za-z0-9_]*|\$\{[^}]*\}|%[A-Za-z_][A-Za-z0-9_()]*%)$`)
})

// relativeGlob makes an absolute glob relative to the folder base when its
// leading plain components are base's path (as given or with its links
// resolved), compared component by component.
func (s *Set) relativeGlob(glob string, base Location) (string, bool) {
	parts := strings.Split(strings.TrimLeft(glob, "/"), "/")
	for _, dir := range []string{base.Abs(), filepath.Join(base.root.real, filepath.FromSlash(base.Rel))} {
		want := splitAbs(dir)
		if len(parts) <= len(want) {
			continue
		}
		if hasPrefixParts(parts, want) {
			return strings.Join(parts[len(want):], "/"), true
		}
	}
	return "", false
}

// literalPrefix returns the leading components of an absolute glob that
// hold no wildcard, as a path.
func literalPrefix(glob string) string {
	parts := strings.Split(glob, "/")
	for i, p := range parts {
		if strings.ContainsAny(p, `*?[]{}\`) {
			parts = parts[:i]
			break
		}
	}
	if p := strings.Join(parts, "/"); p != "" {
		return p
	}
	return "/"
}

// climbs reports whether a glob, read with "/", "\", "," and braces all as
// separators, has a ".." segment: the conservative reading, which also
// catches Windows separators and unbalanced groups, left unexpanded.
func climbs(glob string) bool {
	for _, seg := range strings.FieldsFunc(glob, func(r rune) bool { return strings.ContainsRune(`/\,{}`, r) }) {
		if seg == ".." {
			return true
		}
	}
	return false
}

// hasDotDotSegment reports whether a glob without braces has a segment
// that can only match "..": two units, each a ".", an escaped "\." or a
// bracket class that admits "." ("[.]", "[!a]").
func hasDotDotSegment(glob string) bool {
	for _, seg := range strings.Split(glob, "/") {
		units := 0
		dots := true
		for i := 0; i < len(seg) && dots; i++ {
			units++
			switch c := seg[i]; c {
			case '\\':
				i++
				dots = i < len(seg) && seg[i] == '.'
			case '[':
				end := strings.IndexByte(seg[i+1:], ']')
				if end < 0 {
					dots = false
					break
				}
				class := seg[i+1 : i+1+end]
				dots = strings.Contains(class, ".") || strings.HasPrefix(class, "!") || strings.HasPrefix(class, "^")
				i += end + 1
			default:
				dots = c == '.'
			}
		}
		if dots && units == 2 {
			return true
		}
	}
	return false
}

// isAbsGlob reports whether a glob is an absolute path of some system: "/…",
// "\…", a drive ("C:", "C:\…", "C:/…") or a file: URL.
func isAbsGlob(g string) bool {
	u := unescape(g)
	switch {
	case strings.HasPrefix(g, "/"), strings.HasPrefix(g, `\`), strings.HasPrefix(u, "/"):
		return true
	case len(u) >= 2 && u[1] == ':' && (u[0]|0x20 >= 'a' && u[0]|0x20 <= 'z') && (len(u) == 2 || u[2] == '/' || u[2] == '\\'):
		return true
	case len(g) >= 3 && g[1] == ':' && g[2] == '\\' && (g[0]|0x20 >= 'a' && g[0]|0x20 <= 'z'):
		return true
	}
	return strings.HasPrefix(strings.ToLower(u), "file:")
}

// unescape removes a glob's escapes ("\x" is "x").
func unescape(g string) string {
	if !strings.Contains(g, `\`) {
		return g
	}
	var b strings.Builder
	for i := 0; i < len(g); i++ {
		if g[i] == '\\' && i+1 < len(g) {
			i++
		}
		b.WriteByte(g[i])
	}
	return b.String()
}

// braceMarks calls mark for every '{', '}' and ',' of a glob that is not
// escaped nor inside a [class], with the brace depth before it; an
// unmatched '}' is not passed. It stops when mark returns false.
func braceMarks(g string, mark func(i int, c byte, depth int) bool) {
	depth, inClass := 0, false
	for i := 0; i < len(g); i++ {
		switch c := g[i]; {
		case c == '\\':
			i++
		case inClass:
			inClass = c != ']'
		case c == '[':
			inClass = true
		case c == '{', c == ',', c == '}' && depth > 0:
			if !mark(i, c, depth) {
				return
			}
			switch c {
			case '{':
				depth++
			case '}':
				depth--
			}
		}
	}
}

// braceShape returns how many {a,b} groups a glob has and how deeply they
// nest, reading it as braceAlternatives does.
func braceShape(g string) (groups, depth int) {
	braceMarks(g, func(_ int, c byte, d int) bool {
		if c == '{' {
			groups++
			depth = max(depth, d+1)
		}
		return true
	})
	return groups, depth
}

// firstGroup returns where a glob's first whole {a,b} group opens and
// closes and where its own commas are (escapes and [classes] minded);
// open < 0 when it has none.
func firstGroup(g string) (open, close int, commas []int) {
	open, close = -1, -1
	braceMarks(g, func(i int, c byte, d int) bool {
		switch {
		case c == '{' && d == 0:
			open = i
		case c == '}' && d == 1:
			close = i
			return false
		case c == ',' && d == 1:
			commas = append(commas, i)
		}
		return true
	})
	if close < 0 {
		return -1, -1, nil
	}
	return open, close, commas
}

// braceAlternatives expands a glob's {a,b} groups (nested ones too) into
// the patterns they spell, one group at a time, in order; false when they
// would be more than maxAlts, or writing them (the patterns in between
// included) would take more than budget bytes. Unbalanced braces are kept
// as they are.
func braceAlternatives(g string, maxAlts, budget int) ([]string, bool) {
	var out []string
	for work := []string{g}; len(work) > 0; {
		p := work[0]
		work = work[1:]
		open, close, commas := firstGroup(p)
		if open < 0 {
			if out = append(out, p); len(out) > maxAlts {
				return nil, false
			}
			continue
		}
		start := open + 1
		for _, end := range append(commas, close) {
			if budget -= len(p) - (close - open + 1) + (end - start); budget < 0 {
				return nil, false
			}
			work = append(work, p[:open]+p[start:end]+p[close+1:])
			start = end + 1
		}
	}
	return out, true
}
