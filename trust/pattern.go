package trust

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
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
	ready     atomic.Bool // re is compiled
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
// matches (MatchString), compiled as ordered rewrites it: the matcher
// follows one thread per first letter rather than one per word, and reads
// a letter of a case-insensitive word with a class, not with case folding.
func compileMatch(src string) *pattern {
	p := compile(src)
	p.matchOnly = true
	return p
}

func (p *pattern) get() *regexp.Regexp {
	p.once.Do(func() {
		src := p.src
		if o, ok := orderedSources[src]; ok && p.matchOnly {
			src = o // written at development time
		} else if p.matchOnly {
			src = ordered(src)
		}
		p.re = regexp.MustCompile(src)
		p.ready.Store(true)
	})
	return p.re
}

// compiled reports whether p's expression is compiled already: running it
// then costs only the match.
func (p *pattern) compiled() bool { return p.ready.Load() }

// ordered is src with the branches of every alternation sorted, so that
// the parser factors the branches' common beginnings ("call|…|cancel"
// becomes "ca(?:ll|ncel)|…"), and every case-insensitive literal written
// as classes of the characters it matches ("(?i)ok" as "[Oo][Kk\x{212A}]"):
// the matcher compares a character with a class's few ranges, where a
// folded literal folds the character through Unicode's tables at every
// step (half of a long result's check). The order decides which branch a
// match takes, never whether there is one; a class matches what the folded
// literal matches.
func ordered(src string) string {
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return src // MustCompile says what is wrong
	}
	// An expression anchored at the text's start runs once, at its first
	// byte, not at every byte: its case-insensitive literals stay as they
	// are, the smaller expression to compile (a process compiles each on
	// its first use).
	classes := !anchoredAtStart(re)
	var rewrite func(re *syntax.Regexp)
	rewrite = func(re *syntax.Regexp) {
		if re.Op == syntax.OpAlternate {
			keys := make(map[*syntax.Regexp]string, len(re.Sub))
			for _, sub := range re.Sub {
				keys[sub] = beginning(sub)
			}
			slices.SortStableFunc(re.Sub, func(a, b *syntax.Regexp) int { return strings.Compare(keys[a], keys[b]) })
		}
		for _, sub := range re.Sub {
			rewrite(sub)
		}
		if classes && re.Op == syntax.OpLiteral && re.Flags&syntax.FoldCase != 0 {
			classes := make([]*syntax.Regexp, len(re.Rune))
			for i, r := range re.Rune {
				classes[i] = &syntax.Regexp{Op: syntax.OpCharClass, Rune: foldClass(r)}
			}
			*re = syntax.Regexp{Op: syntax.OpConcat, Sub: classes}
			if len(classes) == 1 {
				*re = *classes[0]
			}
		}
	}
	rewrite(re)
	return re.String()
}

// anchoredAtStart reports whether every match of re begins at the text's
// start (it begins with \A, or ^ outside multi-line mode).
func anchoredAtStart(re *syntax.Regexp) bool {
	for re.Op == syntax.OpConcat && len(re.Sub) > 0 || re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	return re.Op == syntax.OpBeginText
}

// beginning is the literal text a branch begins with (lower case where it
// ignores case), up to what is not literal: what sorting alternations
// brings together. Writing each branch out (String) would cost the square
// of an expression's size.
func beginning(re *syntax.Regexp) string {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return strings.ToLower(string(re.Rune))
		}
		return string(re.Rune)
	case syntax.OpConcat:
		var b strings.Builder
		for _, sub := range re.Sub {
			if sub.Op != syntax.OpLiteral {
				b.WriteString(beginning(sub))
				break
			}
			b.WriteString(beginning(sub))
		}
		return b.String()
	case syntax.OpCapture:
		return beginning(re.Sub[0])
	}
	return "\x00" + re.Op.String() // after no literal: by kind
}

// foldClass is the ranges of the characters r matches case-insensitively:
// r and its orbit under simple case folding.
func foldClass(r rune) []rune {
	runes := []rune{r}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		runes = append(runes, f)
	}
	slices.Sort(runes)
	var class []rune
	for _, c := range runes {
		if n := len(class); n > 0 && class[n-1]+1 == c {
			class[n-1] = c
			continue
		}
		class = append(class, c, c)
	}
	return class
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
