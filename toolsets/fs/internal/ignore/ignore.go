package ignore

import (
	"bytes"
	"regexp"
	"strings"
)

// Rules are the patterns of one .gitignore file, compiled. The zero value
// and nil hold no pattern.
type Rules struct {
	dir      string // slash path of the folder, relative to the walk's root; "" is the root
	patterns []pattern
}

// Dir is the folder (a slash path relative to the root, "" for the root) the
// rules apply below.
func (r *Rules) Dir() string {
	if r == nil {
		return ""
	}
	return r.dir
}

// Len is the number of patterns, comments and blank lines excluded.
func (r *Rules) Len() int {
	if r == nil {
		return 0
	}
	return len(r.patterns)
}

type kind uint8

const (
	never   kind = iota // can match nothing (empty, or malformed like an unterminated "[")
	literal             // the whole pattern is this string
	suffix              // "*" followed by this string (basename patterns only)
	regex               // anything else
)

type pattern struct {
	negate   bool // "!pattern": a match re-includes
	dirOnly  bool // "pattern/": matches directories only
	basename bool // no "/" in the pattern: matched against the last path element
	kind     kind
	lit      string
	re       *regexp.Regexp
}

// Parse compiles the contents of the .gitignore file found in dir, a slash
// path relative to the walk's root ("" or "." for the root itself). It never
// fails: a line git would not match anything with is kept as a pattern that
// matches nothing.
func Parse(dir string, data []byte) *Rules {
	dir = strings.Trim(dir, "/")
	if dir == "." {
		dir = ""
	}
	r := &Rules{dir: dir}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		line = trimTrailingSpaces(line)
		if len(line) == 0 {
			continue
		}
		r.patterns = append(r.patterns, compile(string(line)))
	}
	return r
}

// trimTrailingSpaces drops the unescaped spaces at the end of line, as git
// does ("foo\ " keeps one space; tabs are kept).
func trimTrailingSpaces(line []byte) []byte {
	lastSpace := -1
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case ' ':
			if lastSpace < 0 {
				lastSpace = i
			}
		case '\\':
			i++
			if i >= len(line) {
				return line
			}
			lastSpace = -1
		default:
			lastSpace = -1
		}
	}
	if lastSpace >= 0 {
		return line[:lastSpace]
	}
	return line
}

func compile(text string) pattern {
	var p pattern
	if strings.HasPrefix(text, "!") {
		p.negate = true
		text = text[1:]
	}
	if strings.HasSuffix(text, "/") {
		p.dirOnly = true
		text = text[:len(text)-1]
	}
	p.basename = !strings.Contains(text, "/")
	text = strings.TrimPrefix(text, "/")
	switch {
	case text == "":
		p.kind = never
	case !strings.ContainsAny(text, `*?[\`):
		p.kind, p.lit = literal, text
	case p.basename && text[0] == '*' && !strings.ContainsAny(text[1:], `*?[\`):
		p.kind, p.lit = suffix, text[1:]
	default:
		expr, ok := translate(text)
		if !ok {
			p.kind = never
			break
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			p.kind = never
			break
		}
		p.kind, p.re = regex, re
	}
	return p
}

// match reports whether p matches rel (the path relative to the folder of
// p's .gitignore) whose last element is name.
func (p *pattern) match(rel, name string, isDir bool) bool {
	if p.dirOnly && !isDir {
		return false
	}
	subject := rel
	if p.basename {
		subject = name
	}
	switch p.kind {
	case literal:
		return subject == p.lit
	case suffix:
		return strings.HasSuffix(subject, p.lit)
	case regex:
		return p.re.MatchString(subject)
	}
	return false
}

// Matcher answers whether a path is ignored under a stack of Rules. A nil
// *Matcher ignores only ".git". A Matcher is immutable and safe for
// concurrent use.
type Matcher struct {
	rules []*Rules // shallowest first
}

// New returns a Matcher holding the given rules, shallowest folder first
// (e.g. .git/info/exclude as Parse("", …), then the root's .gitignore).
func New(rules ...*Rules) *Matcher {
	m := &Matcher{}
	for _, r := range rules {
		m = m.Push(r)
	}
	return m
}

// Push returns a Matcher with r on top of m's rules; m is left unchanged.
// Rules without patterns are not stored, and then m itself is returned.
func (m *Matcher) Push(r *Rules) *Matcher {
	if r.Len() == 0 {
		if m == nil {
			return &Matcher{}
		}
		return m
	}
	var n int
	if m != nil {
		n = len(m.rules)
	}
	rules := make([]*Rules, n, n+1)
	if m != nil {
		copy(rules, m.rules)
	}
	return &Matcher{rules: append(rules, r)}
}

// Match reports whether relPath (a clean slash path relative to the root,
// naming a directory when isDir) is ignored, either by the rules for it or
// because one of its parent directories is ignored.
func (m *Matcher) Match(relPath string, isDir bool) bool {
	relPath = strings.Trim(relPath, "/")
	for i := 0; i < len(relPath); i++ {
		if relPath[i] == '/' && m.MatchEntry(relPath[:i], true) {
			return true
		}
	}
	return m.MatchEntry(relPath, isDir)
}

// MatchEntry reports whether the rules ignore relPath itself, assuming its
// parent directories are not ignored: the cheaper question a walker asks,
// since it never descends into an ignored directory.
func (m *Matcher) MatchEntry(relPath string, isDir bool) bool {
	relPath = strings.Trim(relPath, "/")
	name := relPath[strings.LastIndexByte(relPath, '/')+1:]
	if name == ".git" {
		return true
	}
	if m == nil || relPath == "" {
		return false
	}
	for i := len(m.rules) - 1; i >= 0; i-- {
		r := m.rules[i]
		rel := relPath
		if r.dir != "" {
			if len(relPath) <= len(r.dir) || relPath[len(r.dir)] != '/' || relPath[:len(r.dir)] != r.dir {
				continue
			}
			rel = relPath[len(r.dir)+1:]
		}
		for j := len(r.patterns) - 1; j >= 0; j-- {
			if p := &r.patterns[j]; p.match(rel, name, isDir) {
				return !p.negate
			}
		}
	}
	return false
}
