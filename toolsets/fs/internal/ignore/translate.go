package ignore

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// translate turns a gitignore pattern (without its "!", leading "/" and
// trailing "/") into an anchored RE2 expression with the semantics of git's
// wildmatch in pathname mode. ok is false when git would never match the
// pattern (an unterminated bracket expression, an unknown [:class:], a
// trailing backslash).
func translate(pat string) (expr string, ok bool) {
	var b strings.Builder
	b.WriteString(`^`)
	var lit []byte
	flush := func() {
		if len(lit) > 0 {
			b.WriteString(quote(string(lit)))
			lit = lit[:0]
		}
	}
	for i := 0; i < len(pat); i++ {
		c := pat[i]
		switch c {
		case '\\':
			i++
			if i >= len(pat) {
				return "", false
			}
			lit = append(lit, pat[i])
		case '?':
			flush()
			b.WriteString(`[^/]`)
		case '*':
			flush()
			j := i
			for j < len(pat) && pat[j] == '*' {
				j++
			}
			double := j-i >= 2
			atStart := i == 0 || pat[i-1] == '/'
			switch {
			case double && atStart && j == len(pat):
				b.WriteString(`.*`)
			case double && atStart && pat[j] == '/':
				b.WriteString(`(?:.*/)?`)
				j++ // the "/" is part of "**/"
			default:
				b.WriteString(`[^/]*`)
			}
			i = j - 1
		case '[':
			flush()
			class, next, ok := bracket(pat, i)
			if !ok {
				return "", false
			}
			b.WriteString(class)
			i = next - 1
		default:
			lit = append(lit, c)
		}
	}
	flush()
	b.WriteString(`$`)
	return b.String(), true
}

// quote escapes s for a regular expression, byte for byte (so that invalid
// UTF-8 stays as it is and the compiler rejects it).
func quote(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(`\.+*?()|[]{}^$`, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

type span struct{ lo, hi rune }

// posixClasses are the [:name:] sets git knows, in the C locale.
var posixClasses = map[string][]span{
	"alnum":  {{'0', '9'}, {'A', 'Z'}, {'a', 'z'}},
	"alpha":  {{'A', 'Z'}, {'a', 'z'}},
	"blank":  {{' ', ' '}, {'\t', '\t'}},
	"cntrl":  {{0, 0x1f}, {0x7f, 0x7f}},
	"digit":  {{'0', '9'}},
	"graph":  {{0x21, 0x7e}},
	"lower":  {{'a', 'z'}},
	"print":  {{0x20, 0x7e}},
	"punct":  {{0x21, 0x2f}, {0x3a, 0x40}, {0x5b, 0x60}, {0x7b, 0x7e}},
	"space":  {{'\t', '\r'}, {' ', ' '}},
	"upper":  {{'A', 'Z'}},
	"xdigit": {{'0', '9'}, {'A', 'F'}, {'a', 'f'}},
}

// bracket translates the bracket expression starting at pat[start] == '['.
// It returns the expression and the index just after the closing "]".
func bracket(pat string, start int) (expr string, next int, ok bool) {
	p := start + 1
	negated := false
	if p < len(pat) && (pat[p] == '!' || pat[p] == '^') {
		negated = true
		p++
	}
	// char reads one (possibly multi-byte) character at p.
	char := func(p int) (rune, int) {
		if p >= len(pat) {
			return 0, 0
		}
		if pat[p] < utf8.RuneSelf {
			return rune(pat[p]), 1
		}
		return utf8.DecodeRuneInString(pat[p:])
	}
	var spans []span
	var prev rune = -1 // the previous single character, usable as a range start
	first := true
	for {
		if p >= len(pat) {
			return "", 0, false
		}
		if pat[p] == ']' && !first {
			p++
			break
		}
		first = false
		c, n := char(p)
		switch {
		case c == '\\':
			c, n = char(p + 1)
			if n == 0 {
				return "", 0, false
			}
			spans = append(spans, span{c, c})
			prev = c
			p += 1 + n
		case c == '-' && prev >= 0 && p+1 < len(pat) && pat[p+1] != ']':
			p++
			hi, n := char(p)
			if hi == '\\' {
				hi, n = char(p + 1)
				if n == 0 {
					return "", 0, false
				}
				p++
			}
			if prev <= hi {
				spans = append(spans, span{prev, hi})
			}
			p += n
			prev = -1
		case c == '[' && p+1 < len(pat) && pat[p+1] == ':':
			end := strings.IndexByte(pat[p+2:], ']')
			if end < 0 {
				return "", 0, false
			}
			name := pat[p+2 : p+2+end]
			if !strings.HasSuffix(name, ":") {
				// No ":]": the "[" is an ordinary character.
				spans = append(spans, span{'[', '['})
				prev = '['
				p++
				continue
			}
			set, known := posixClasses[strings.TrimSuffix(name, ":")]
			if !known {
				return "", 0, false
			}
			spans = append(spans, set...)
			p += 2 + end + 1
			prev = -1
		default:
			spans = append(spans, span{c, c})
			prev = c
			p += n
		}
	}
	var b strings.Builder
	b.WriteString("[")
	if negated {
		b.WriteString("^/")
	}
	wrote := false
	for _, s := range spans {
		if !negated {
			// A bracket expression never matches "/" in a path.
			if s.lo <= '/' && s.hi >= '/' {
				if s.lo < '/' {
					fmt.Fprintf(&b, `\x{%x}-\x{%x}`, s.lo, '/'-1)
					wrote = true
				}
				if s.hi > '/' {
					fmt.Fprintf(&b, `\x{%x}-\x{%x}`, '/'+1, s.hi)
					wrote = true
				}
				continue
			}
		}
		fmt.Fprintf(&b, `\x{%x}-\x{%x}`, s.lo, s.hi)
		wrote = true
	}
	b.WriteString("]")
	if !negated && !wrote {
		return `[^\x00-\x{10FFFF}]`, p, true // matches nothing
	}
	return b.String(), p, true
}
