package trust

import (
	"regexp"
	"sync"
)

// pattern is a regular expression compiled on its first use. The scanner
// and the result check hold a few hundred; every toolgate command imports
// this package, and most never scan, so none of them should pay at start
// for compiling them (about 16 ms).
type pattern struct {
	src  string
	once sync.Once
	re   *regexp.Regexp
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

func (p *pattern) get() *regexp.Regexp {
	p.once.Do(func() { p.re = regexp.MustCompile(p.src) })
	return p.re
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
