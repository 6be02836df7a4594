package trust

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
)

// pattern is a regular expression compiled on its first use. The scanner
// and the result check hold a few hundred; every toolgate command imports
// this package, and most never scan, so none of them should pay at start
// for compiling them (about 16 ms).
type pattern struct {
	src       string
	matchOnly bool // only MatchString is asked (compileMatch)
	once      sync.Once
	re        *regexp.Regexp
}

// patterns are all the package's patterns, for the test that compiles
// each (a typo fails the build's tests, not a scan in production).
var patterns []*pattern

var patternsMu sync.Mutex

// compile returns src as a pattern, compiled when first used.
func compile(src string) *pattern {
	p := &pattern{src: src}
	patternsMu.Lock()
	patterns = append(patterns, p)
	patternsMu.Unlock()
	return p
}

// compileMatch returns src as a pattern that is only asked whether it
// matches (MatchString), compiled with every alternation in order so that
// the parser factors the branches' common beginnings ("call|…|cancel"
// becomes "ca(?:ll|ncel)|…"): the matcher follows one thread per first
// letter rather than one per word. The order decides which branch a match
// takes, never whether there is one.
func compileMatch(src string) *pattern {
	p := compile(src)
	p.matchOnly = true
	return p
}

func (p *pattern) get() *regexp.Regexp {
	p.once.Do(func() {
		src := p.src
		if p.matchOnly {
			src = ordered(src)
		}
		p.re = regexp.MustCompile(src)
	})
	return p.re
}

// ordered is src with the branches of every alternation sorted.
func ordered(src string) string {
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return src // MustCompile says what is wrong
	}
	var sortAlternations func(re *syntax.Regexp)
	sortAlternations = func(re *syntax.Regexp) {
		for _, sub := range re.Sub {
			sortAlternations(sub)
		}
		if re.Op == syntax.OpAlternate {
			slices.SortStableFunc(re.Sub, func(a, b *syntax.Regexp) int { return strings.Compare(a.String(), b.String()) })
		}
	}
	sortAlternations(re)
	return re.String()
}

func (p *pattern) String() string { return p.src }

func (p *pattern) MatchString(s string) bool              { return p.get().MatchString(s) }
func (p *pattern) FindString(s string) string             { return p.get().FindString(s) }
func (p *pattern) FindAllString(s string, n int) []string { return p.get().FindAllString(s, n) }
func (p *pattern) FindAllStringIndex(s string, n int) [][]int {
	return p.get().FindAllStringIndex(s, n)
}
func (p *pattern) FindAllStringSubmatch(s string, n int) [][]string {
	return p.get().FindAllStringSubmatch(s, n)
}
func (p *pattern) ReplaceAllStringFunc(s string, f func(string) string) string {
	return p.get().ReplaceAllStringFunc(s, f)
}
func (p *pattern) Split(s string, n int) []string { return p.get().Split(s, n) }
