package fs

import (
	"path/filepath"
	"regexp"
	"strings"

	"github.com/toolgate/toolgate/tool"
)

// maxGlobAlternatives bounds the expansion of a glob's {a,b} groups when it
// is checked; a glob with more is refused.
const maxGlobAlternatives = 1024

// confineGlob checks a glob argument of search_files (arg is its name:
// "glob", or "pattern" for target=files) that is matched against the paths
// inside the folder base, and returns the glob to use.
//
// A glob can only match paths inside the searched folder, so one that
// names a place elsewhere would silently match nothing; it is refused with
// invalid_arguments naming the argument instead. Refused, in any of the
// alternatives its {a,b} groups spell, escaped or not: a ".." segment (also
// "\.\.", "[.][.]", and Windows' "..\"), an absolute pattern ("/…", "\…",
// "C:\…", "file:…") outside the searched folder, and a leading "~" or
// variable ($HOME, ${HOME}, %USERPROFILE%), which are never expanded. An
// absolute pattern inside the searched folder is made relative to it
// ("/ws/src/**/*.go" searching /ws becomes "src/**/*.go"); a leading "./"
// is dropped.
func (s *Set) confineGlob(arg, glob string, base Location) (string, error) {
	if glob == "" {
		return "", nil
	}
	fail := func(format string, args ...any) error {
		return tool.Errorf(tool.InvalidArguments, "%s %q "+format, append([]any{arg, glob}, args...)...).
			WithSuggestion("write %s relative to the searched folder (e.g. \"**/*.go\" or \"src/**/*.ts\"); to search somewhere else, set path to that folder inside the workspace", arg).
			WithDetail("argument", arg)
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
	if climbs(glob) {
		return "", fail("climbs out of the searched folder with \"..\"; it can only match paths inside it")
	}
	alts, ok := braceAlternatives(glob, maxGlobAlternatives)
	if !ok {
		return "", tool.Errorf(tool.InvalidArguments, "%s %q spells more than %d alternatives with its {a,b} groups", arg, glob, maxGlobAlternatives).
			WithSuggestion("use fewer or smaller {a,b} groups, or several searches").
			WithDetail("argument", arg)
	}
	for _, a := range alts {
		switch first, _, _ := strings.Cut(unescape(a), "/"); {
		case climbs(a) || climbs(unescape(a)) || hasDotDotSegment(a):
			return "", fail("climbs out of the searched folder with \"..\"; it can only match paths inside it")
		case isAbsGlob(a):
			return "", fail("holds an absolute pattern (%q); it could match nothing inside the searched folder", a)
		case strings.HasPrefix(first, "~") && (first == "~" || strings.Contains(a, "/")):
			return "", fail("starts with \"~\", which is not expanded: it names no folder of the workspace")
		case variable.MatchString(first):
			return "", fail("starts with the variable %q, which is not expanded: it names no folder of the workspace", first)
		}
	}
	for strings.HasPrefix(glob, "./") {
		glob = strings.TrimLeft(glob[2:], "/")
	}
	return glob, nil
}

// variable is a whole path segment that names a variable: $HOME, ${HOME},
// %USERPROFILE%.
var variable = regexp.MustCompile(`^(\$[A-Za-z_][A-Za-z0-9_]*|\$\{[^}]*\}|%[A-Za-z_][A-Za-z0-9_()]*%)$`)

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
// catches Windows separators and groups too irregular to expand.
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

// braceAlternatives expands a glob's {a,b} groups (nested ones too, minding
// escapes and [classes]) into the patterns they spell; false when there
// would be more than max. Unbalanced braces are kept as they are.
func braceAlternatives(g string, max int) ([]string, bool) {
	open, close := -1, -1
	depth, inClass := 0, false
	var commas []int
	for i := 0; i < len(g) && close < 0; i++ {
		switch c := g[i]; {
		case c == '\\':
			i++
		case inClass:
			inClass = c != ']'
		case c == '[':
			inClass = true
		case c == '{':
			if depth == 0 {
				open = i
			}
			depth++
		case c == '}' && depth > 0:
			depth--
			if depth == 0 {
				close = i
			}
		case c == ',' && depth == 1:
			commas = append(commas, i)
		}
	}
	if open < 0 || close < 0 {
		return []string{g}, true
	}
	prefix, suffix := g[:open], g[close+1:]
	var out []string
	start := open + 1
	for _, end := range append(commas, close) {
		more, ok := braceAlternatives(prefix+g[start:end]+suffix, max-len(out))
		if !ok || len(out)+len(more) > max {
			return nil, false
		}
		out = append(out, more...)
		start = end + 1
	}
	return out, true
}
