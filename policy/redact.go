package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// SecretPattern is one kind of secret to redact.
type SecretPattern struct {
	Name string // shown in the replacement: [REDACTED:name]
	// Regexp matches the secret. When it has a group named "secret", only
	// that group is replaced (so "password=hunter22" keeps "password=").
	Regexp string
}

// DefaultSecrets are credentials with a recognisable shape.
func DefaultSecrets() []SecretPattern {
	return []SecretPattern{
		{"private_key", `-----BEGIN[A-Z ]*PRIVATE KEY-----[\s\S]*?-----END[A-Z ]*PRIVATE KEY-----`},
		{"aws_access_key", `\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`},
		{"github_token", `\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b`},
		{"anthropic_key", `\bsk-ant-[A-Za-z0-9_-]{20,}`},
		{"openai_key", `\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}`},
		{"slack_token", `\bxox[abposr]-[A-Za-z0-9-]{10,}`},
		{"google_api_key", `\bAIza[0-9A-Za-z_-]{35}\b`},
		{"stripe_key", `\b(?:sk|rk)_live_[0-9A-Za-z]{20,}`},
		{"jwt", `\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`},
		{"url_password", `[a-z][a-z0-9+.-]*://[^/\s:@]+:(?P<secret>[^/\s@]{3,})@`},
		{"assigned_secret", `(?i)\b[a-z0-9_.-]*(?:password|passwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token)["']?\s*[:=]\s*["']?(?P<secret>[^\s"',;\[][^\s"',;]{7,})`},
	}
}

// Redactor replaces secrets in text. The zero value redacts nothing.
//
// Before running a pattern's regular expression over a text, it checks that
// the text contains one of the literal strings every match of the pattern
// must contain (e.g. "://" for url_password, "AKIA" or "ASIA" for
// aws_access_key), derived from the expression's syntax (see anchorsFor): a
// text without them cannot match, so the expression, far slower than a
// substring search, is skipped. A pattern without such literals always runs.
// One pass over the text finds the literals of every pattern at once (see
// prefilter); a text is scanned again only after a secret was replaced in it.
// Where a text holds them, the expression runs only over the runs of bytes
// around them that a match may hold (see find), not over the whole text.
type Redactor struct {
	patterns []compiledSecret
	filter   *prefilter
	noFilter bool // tests: run every expression (the reference behaviour)
	literals bool // every pattern has literals
	// inStrings: every pattern has literals, and each lies inside one
	// string wherever JSON encoded compactly holds it (see MayMatchJSON).
	inStrings bool
	// jsonSafe: every pattern has literals, and each is jsonSafe: a quiet
	// JSON text vouches for the ASCII strings it encodes.
	jsonSafe bool
	// escStarts are the control characters (of \n, \r and \t) whose
	// escape's letter starts a literal (in lower case when it ignores case):
	// a string's encoding may show a literal its text does not ("\rk_live_").
	escStarts string
}

type compiledSecret struct {
	name   string
	re     func() *regexp.Regexp // compiled at its first use: most texts hold none of a pattern's anchors
	secret int                   // index of the "secret" group, or 0 for the whole match
	need   anchors               // a match contains one of these; none: always run re
	// cut are the bytes no match holds (nil: none, or the expression
	// looks at where the text or a line ends): re runs only over the runs
	// of other bytes that hold one of need's literals (see find).
	cut  *[256]bool
	lits []string // need's literals as find looks for them: in ASCII lower case when they ignore case
}

// NewRedactor checks patterns and makes a Redactor of them. An expression
// is parsed here, so that a bad one is refused at once, and compiled when
// a text first needs it: compiling them all was a tenth of a `toolgate
// call`'s own work.
func NewRedactor(patterns []SecretPattern) (*Redactor, error) {
	r := &Redactor{literals: true, inStrings: true, jsonSafe: true}
	var need []anchors
	for _, p := range patterns {
		parsed, err := syntax.Parse(p.Regexp, syntax.Perl) // regexp.Compile's flags
		if err != nil {
			return nil, fmt.Errorf("policy: secret pattern %q: %w", p.Name, err)
		}
		expr := p.Regexp
		c := compiledSecret{
			name: p.Name,
			// A parsed expression compiles: syntax.Compile has no errors.
			re:   sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) }),
			need: anchorsFor(parsed),
		}
		c.cut = cutBytes(parsed, c.need)
		if len(c.need.lits) == 0 {
			r.literals, r.inStrings, r.jsonSafe = false, false, false
		}
		for _, l := range c.need.lits {
			if c.need.fold {
				l = lowerASCII(l)
			}
			c.lits = append(c.lits, l)
			// Lower case changes no byte either test looks at:
			// outsideStrings holds both cases, and jsonSafe no letter.
			r.inStrings = r.inStrings && insideStrings(l)
			r.jsonSafe = r.jsonSafe && jsonSafe(l)
			if i := strings.IndexByte("nrt", l[0]); i >= 0 && strings.IndexByte(r.escStarts, "\n\r\t"[i]) < 0 {
				r.escStarts += "\n\r\t"[i : i+1]
			}
		}
		if i := slices.Index(parsed.CapNames(), "secret"); i > 0 {
			c.secret = i
		}
		r.patterns = append(r.patterns, c)
		need = append(need, c.need)
	}
	r.filter = newPrefilter(need)
	return r, nil
}

// RedactJSON returns enc, the JSON text of a value as encoding/json
// writes it (tool.MarshalJSON), with every secret replaced, and how many
// were replaced. Each string (an object's key or a value, at any depth)
// is redacted as the text it is, exactly as Redact redacts a text block:
// the encoding's escapes (\n, \u003c...) put a word character before the
// next byte and hide white space, so a search of the encoding missed a
// secret right after a newline, a '<' or a control character. Then the
// encoding itself is searched for secrets that span strings (a key and
// its value: "password":"..."); a match there that lies inside one string
// is left to the first search. The result is JSON text when a replacement
// of the second search leaves it so (a caller decodes it, and must not
// use what does not decode). enc is returned as it is, and quiet, when
// the prefilter finds no pattern's literal in it and the patterns are
// jsonSafe: a string holding a literal then shows it in enc, each
// literal's bytes being written as themselves; so a quiet enc also
// vouches for any ASCII string it encodes (see QuietInside).
func (r *Redactor) RedactJSON(enc string) (string, int, bool) {
	if r == nil || len(r.patterns) == 0 {
		return enc, 0, true
	}
	if !r.noFilter && r.jsonSafe && !r.literalIn(enc) {
		return enc, 0, true
	}
	var b []byte
	last, total := 0, 0
	jsonStrings(enc, func(i, j int) bool {
		text := enc[i+1 : j-1]
		if strings.IndexByte(text, '\\') >= 0 && json.Unmarshal([]byte(enc[i:j]), &text) != nil {
			return true // not JSON: left to the second search
		}
		if t, k := r.Redact(text); k > 0 {
			q, _ := json.Marshal(t) // a string always encodes
			b = append(append(b, enc[last:i]...), q...)
			last, total = j, total+k
		}
		return true
	})
	if b != nil {
		enc = string(append(b, enc[last:]...))
	}
	out, k := r.redact(enc, acrossStrings)
	return out, total + k, false
}

// acrossStrings reports whether the match s[start:end] is not inside
// one of the JSON text s's strings.
func acrossStrings(s string, start, end int) bool {
	inside := false
	jsonStrings(s, func(i, j int) bool {
		inside = i < start && end < j
		return !inside && j <= start
	})
	return !inside
}

// jsonStrings calls fn(i, j) for each string s[i:j] of the JSON text s,
// quotes included, in order, while fn returns true. A string s leaves
// open is not given.
func jsonStrings(s string, fn func(i, j int) bool) {
	for i := 0; ; {
		q := strings.IndexByte(s[i:], '"')
		if q < 0 {
			return
		}
		start := i + q
		j := start + 1
		for {
			e := strings.IndexAny(s[j:], `"\`)
			if e < 0 {
				return
			}
			j += e
			if s[j] == '"' {
				break
			}
			j += 2 // an escape: skip the byte after '\\'
			if j > len(s) {
				return
			}
		}
		if !fn(start, j+1) {
			return
		}
		i = j + 1
	}
}

// MayMatchJSON reports whether RedactJSON could replace anything in the
// compact encoding (encoding/json's, as tool.MarshalJSON writes it) of v,
// the value that b, valid JSON, was decoded into; false only when it surely
// could not, so a caller may then leave that encoding unmade. quiet are
// texts Quiet found quiet (the result's text blocks), which v's strings
// may repeat.
//
// Redact finds nothing in a text where the prefilter finds no pattern's
// literal, when every pattern has literals. Each string of the value is
// written in the encoding as it stood between its quotes in b when b holds
// no escape but the five the encoding writes (\", \\, \n, \r, \t), no
// '<', '>', '&', U+2028 or U+2029 (which the encoding escapes) and is valid
// UTF-8 (the encoding writes U+FFFD for a bad byte): a non-ASCII byte of
// the encoding is then one of b too. A literal without '"' and with a byte that compact
// JSON has only inside strings (anything but {}[]:, digits, + - . and the
// letters of true, false, null and exponents, in either case) lies, where
// the encoding holds it, inside one string: so in b too. Then a b in which
// the prefilter finds no literal gives an encoding in which it finds none,
// which RedactJSON returns as it is when the patterns are also jsonSafe.
// Where every string of v is quiet (quietStrings), the encoding holds no
// literal either, and b is not read again.
// Anything else (a pattern without literals or with another literal, an
// escape, a bad byte) answers true.
func (r *Redactor) MayMatchJSON(b []byte, v any, quiet []string) bool {
	if r == nil || len(r.patterns) == 0 {
		return false
	}
	if r.noFilter || !r.inStrings || !r.jsonSafe || !plainJSON(b) {
		return true
	}
	if r.quietStrings(v, newQuietSet(quiet)) {
		return false
	}
	return r.literalIn(string(b))
}

// Quiet reports whether Redact(s) surely replaces nothing: every pattern
// has literals, and the prefilter finds none in s.
func (r *Redactor) Quiet(s string) bool {
	if r == nil || len(r.patterns) == 0 {
		return true
	}
	return !r.noFilter && r.literals && !r.literalIn(s)
}

// literalIn reports whether the prefilter finds a pattern's literal in s.
func (r *Redactor) literalIn(s string) bool {
	var buf [32]bool
	may := append(buf[:0], make([]bool, len(r.patterns))...)
	r.filter.scan(s, may)
	return slices.Contains(may, true)
}

// maxScanned is the longest string quietStrings searches itself.
const maxScanned = 64

// quietStrings reports whether no string of v, a key or a value, can show
// a literal in v's encoding, when b (of MayMatchJSON) is plainJSON: each
// is one of quiet or a short string in which the prefilter finds none,
// and holds no control character of escStarts. Its encoding is then its
// bytes with only \", \\, \n, \r and \t written as two: a literal,
// which has neither '"' nor '\\' (jsonSafe), lies in a run of bytes
// the string holds as they are, or starts with the letter of an escape,
// which escStarts rules out.
func (r *Redactor) quietStrings(v any, quiet quietSet) bool {
	switch v := v.(type) {
	case nil, bool, float64:
		return true
	case string:
		return r.quietString(v, quiet)
	case []any:
		for _, e := range v {
			if !r.quietStrings(e, quiet) {
				return false
			}
		}
		return true
	case map[string]any:
		for k, e := range v {
			if !r.quietString(k, quiet) || !r.quietStrings(e, quiet) {
				return false
			}
		}
		return true
	}
	return false
}

func (r *Redactor) quietString(s string, quiet quietSet) bool {
	for i := 0; i < len(r.escStarts); i++ {
		if strings.IndexByte(s, r.escStarts[i]) >= 0 {
			return false
		}
	}
	return quiet.has(s) || len(s) <= maxScanned && r.Quiet(s)
}

// quietSet holds MayMatchJSON's quiet texts: a few (a server's one text
// block) are compared one by one, more are put in a map, so that an
// upstream's n text blocks and a value of m strings cost n+m look-ups,
// not n·m compares.
type quietSet struct {
	few  []string
	many map[string]struct{}
}

func newQuietSet(quiet []string) quietSet {
	if len(quiet) <= 4 {
		return quietSet{few: quiet}
	}
	many := make(map[string]struct{}, len(quiet))
	for _, q := range quiet {
		many[q] = struct{}{}
	}
	return quietSet{many: many}
}

func (q quietSet) has(s string) bool {
	if q.many == nil {
		return slices.Contains(q.few, s)
	}
	_, ok := q.many[s]
	return ok
}

// outsideStrings are the bytes compact JSON holds outside strings.
const outsideStrings = "{}[]:,0123456789+-.eEtrufalsnTRUFALSN"

// insideStrings reports whether lit, wherever compact JSON holds it, lies
// inside one string: it has no '"' (so it cannot hold a string's end) and a
// byte found nowhere else.
func insideStrings(lit string) bool {
	if strings.IndexByte(lit, '"') >= 0 {
		return false
	}
	for i := 0; i < len(lit); i++ {
		if strings.IndexByte(outsideStrings, lit[i]) < 0 {
			return true
		}
	}
	return false
}

// plainJSON reports whether b's strings are written in b as compact JSON
// writes them: b is valid UTF-8 and holds no '<', '>', '&', U+2028 or
// U+2029, and no escape but \", \\, \n, \r and \t (a string with
// another control character has one). Bytes that are all ASCII (a JSON
// text's usual case) are valid UTF-8 without U+2028 or U+2029: they are
// not searched for either.
func plainJSON(b []byte) bool {
	if bytes.IndexByte(b, '<') >= 0 || bytes.IndexByte(b, '>') >= 0 || bytes.IndexByte(b, '&') >= 0 {
		return false
	}
	for rest := b; ; {
		i := bytes.IndexByte(rest, '\\')
		if i < 0 {
			break
		}
		if i+1 == len(rest) {
			return false
		}
		switch rest[i+1] {
		case '"', '\\', 'n', 'r', 't':
		default:
			return false
		}
		rest = rest[i+2:]
	}
	return isASCII(b) || utf8.Valid(b) && !bytes.Contains(b, []byte("\u2028")) && !bytes.Contains(b, []byte("\u2029"))
}

// Redact returns s with every secret replaced by [REDACTED:name], and how
// many were replaced.
func (r *Redactor) Redact(s string) (string, int) {
	return r.redact(s, nil)
}

// redact is Redact, replacing only the matches keep keeps (nil: all).
func (r *Redactor) redact(s string, keep func(s string, start, end int) bool) (string, int) {
	if r == nil {
		return s, 0
	}
	total := 0
	var buf [32]bool
	may := buf[:0]
	if !r.noFilter && r.filter != nil {
		may = append(may, make([]bool, len(r.patterns))...)
		r.filter.scan(s, may)
		if r.literals && !slices.Contains(may, true) {
			return s, 0 // no pattern can match: the loop below would skip each
		}
	}
	for i := range r.patterns {
		p := &r.patterns[i] // not a copy of its twelve words for each pattern
		if !r.noFilter && len(p.need.lits) > 0 && !may[i] {
			continue
		}
		matches := p.find(s, r.noFilter)
		if len(matches) == 0 {
			continue
		}
		var b strings.Builder
		last := 0
		for _, m := range matches {
			start, end := m[2*p.secret], m[2*p.secret+1]
			if start < last || keep != nil && !keep(s, m[0], m[1]) {
				continue
			}
			b.WriteString(s[last:start])
			b.WriteString("[REDACTED:" + p.name + "]")
			last = end
			total++
		}
		b.WriteString(s[last:])
		s = b.String()
		if !r.noFilter {
			clear(may)
			r.filter.scan(s, may)
		}
	}
	return s, total
}

// QuietInside reports whether Redact(t) is sure to replace nothing, t's
// JSON encoding lying inside a text RedactJSON found quiet: t is ASCII,
// so its encoding holds each of its bytes but those JSON escapes, in its
// order, and a pattern's literal, which holds none of those (and neither
// does any case of it: they are not letters), would be found in the
// encoding wherever it is in t. Every pattern needs one of its literals
// to match, and the quiet text holds none.
func (r *Redactor) QuietInside(t string) bool {
	return r == nil || r.jsonSafe && !r.noFilter && isASCII(t)
}

// jsonSafe reports whether lit holds no byte that a JSON string escapes
// (nor any byte outside ASCII): a JSON text then holds it wherever one of
// its strings does.
func jsonSafe(lit string) bool {
	for i := 0; i < len(lit); i++ {
		if c := lit[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// find returns the matches of p's expression in s, as
// FindAllStringSubmatchIndex does. Every match lies in a run of bytes
// that are not cut and holds one of the pattern's literals, so with cut
// bytes the expression runs only over those runs (whole: not with
// reference): the matches are the same, and a text of prose that holds
// "://" or "password" here and there no longer costs a pass of the
// matcher over every byte (Go's matcher tries an expression that begins
// with a class at every byte: about 70 M instructions for two patterns on
// read_file's 32 KB of docs).
func (p *compiledSecret) find(s string, reference bool) [][]int {
	re := p.re()
	text := s
	if p.need.fold && !isASCII(s) {
		// (?i) reads the Kelvin sign as k and the long s as s: the
		// literals' ASCII lower case would not find them.
		reference = reference || strings.Contains(s, "\u212A") || strings.Contains(s, "\u017F")
	}
	if p.cut == nil || reference {
		return re.FindAllStringSubmatchIndex(s, -1)
	}
	if p.need.fold {
		text = lowerASCII(s)
	}
	// The runs that hold a literal, each once, in order.
	var runs [][2]int
	for _, lit := range p.lits {
		for from := 0; from < len(text); {
			j := strings.Index(text[from:], lit)
			if j < 0 {
				break
			}
			a, b := from+j, from+j+len(lit)
			for a > 0 && !p.cut[s[a-1]] {
				a--
			}
			for b < len(s) && !p.cut[s[b]] {
				b++
			}
			runs = append(runs, [2]int{a, b})
			from = max(b, from+j+1)
		}
	}
	slices.SortFunc(runs, func(x, y [2]int) int { return x[0] - y[0] })
	runs = slices.Compact(runs)
	var out [][]int
	for _, run := range runs {
		for _, m := range re.FindAllStringSubmatchIndex(s[run[0]:run[1]], -1) {
			for k := range m {
				if m[k] >= 0 {
					m[k] += run[0]
				}
			}
			out = append(out, m)
		}
	}
	return out
}

// cutBytes returns the bytes no match of re holds, nil when there are
// none or when runs of the others cannot be matched on their own: re
// looks at where the text or a line ends (^, $, \A, \z), or need has no
// literal (or, ignoring case, one outside ASCII). A \b or \B reads the
// byte before and after a match: then only bytes outside words are cut,
// which read as the text's ends do.
func cutBytes(re *syntax.Regexp, need anchors) *[256]bool {
	if len(need.lits) == 0 {
		return nil
	}
	for _, l := range need.lits {
		if l == "" || need.fold && !isASCII(l) {
			return nil
		}
	}
	var held [256]bool
	word := false
	high := func() {
		for b := 0x80; b < 256; b++ {
			held[b] = true
		}
	}
	runes := func(lo, hi rune) {
		for r := lo; r <= hi && r < utf8.RuneSelf; r++ {
			held[r] = true
		}
		if hi >= utf8.RuneSelf {
			high()
		}
	}
	ok := true
	var walk func(re *syntax.Regexp)
	walk = func(re *syntax.Regexp) {
		switch re.Op {
		case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText:
			ok = false
		case syntax.OpWordBoundary, syntax.OpNoWordBoundary:
			word = true
		case syntax.OpLiteral:
			for _, r := range re.Rune {
				runes(r, r)
				if re.Flags&syntax.FoldCase != 0 {
					for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
						runes(f, f)
					}
				}
			}
		case syntax.OpCharClass:
			for i := 0; i+1 < len(re.Rune); i += 2 {
				runes(re.Rune[i], re.Rune[i+1])
			}
		case syntax.OpAnyCharNotNL:
			runes(0, '\n'-1)
			runes('\n'+1, unicode.MaxRune)
		case syntax.OpAnyChar:
			runes(0, unicode.MaxRune)
		}
		for _, sub := range re.Sub {
			walk(sub)
		}
	}
	walk(re)
	var cut [256]bool
	some := false
	for b := range cut {
		c := byte(b)
		cut[b] = !held[b] && !(word && ('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'))
		some = some || cut[b]
	}
	if !ok || !some {
		return nil
	}
	return &cut
}

// lowerASCII is s with its ASCII capitals lowered, every byte in its place.
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// isASCII reports whether s is all ASCII, eight bytes at a time.
func isASCII[T ~string | ~[]byte](s T) bool {
	for ; len(s) >= 32; s = s[32:] { // four words, one test
		if (load64(s)|load64(s[8:])|load64(s[16:])|load64(s[24:]))&0x8080808080808080 != 0 {
			return false
		}
	}
	for ; len(s) >= 8; s = s[8:] {
		if load64(s)&0x8080808080808080 != 0 {
			return false
		}
	}
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// load64 reads the first eight bytes of s, the first the lowest (one load
// on amd64 and arm64).
func load64[T ~string | ~[]byte](s T) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}
