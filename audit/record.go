package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/internal/jsonstr"
)

// Decisions a policy can make about a call.
const (
	DecisionAllow = "allow"
	DecisionDeny  = "deny"
	DecisionAsk   = "ask"
)

// Outcomes of a call.
const (
	OutcomeOK      = "ok"      // the tool ran and succeeded
	OutcomeError   = "error"   // the tool ran and failed
	OutcomeDenied  = "denied"  // policy or an approver refused the call
	OutcomeInvalid = "invalid" // the call never ran: unknown tool or bad arguments
)

// Limits on what Arguments keeps verbatim (see Record.Arguments).
const (
	MaxStringLen    = 256  // a longer string value is replaced by its digest
	MaxArgumentsLen = 4096 // larger arguments (after string digests) are replaced by one digest
)

// GenesisHash is the PrevHash of a log's first record: 64 zeros.
const GenesisHash = "0000000000000000000000000000000000000000000000000000000000000000"

// Record is one line of the audit log: one decision about one call.
//
// On the wire it is a JSON object whose members always appear, in this order:
// time, call_id, session, principal, auth, tool, arguments, decision, rule, mode,
// approver, scope, duration_ms, outcome, error_type, prev_hash, hash.
// See the package documentation for the exact encoding and the hash rule.
type Record struct {
	// Time is when the call was decided, written in RFC 3339 with
	// nanoseconds, in UTC. Append sets it to the current time when zero.
	Time time.Time
	// CallID, Session, Principal and Tool identify the call (see tool.Call).
	CallID, Session, Principal, Tool string
	// Auth is the credential that vouched for Principal.
	Auth Auth
	// Arguments are the call's arguments as JSON. They are written compactly;
	// a string value longer than MaxStringLen bytes becomes
	// {"sha256":"<hex of the string's bytes>","len":N}, and arguments still
	// longer than MaxArgumentsLen bytes become one such object over the
	// arguments exactly as given. Bytes that are not JSON are written as a
	// JSON string when they are valid UTF-8 of at most MaxStringLen bytes,
	// otherwise as their digest. Empty arguments are written as null.
	Arguments json.RawMessage
	// Decision is the policy's verdict (DecisionAllow, DecisionDeny,
	// DecisionAsk, …) and Rule the rule or reason that made it.
	Decision, Rule string
	// Mode is the policy mode, Approver who approved or refused an "ask",
	// Scope the scope an approval was given for. Any may be empty.
	Mode, Approver, Scope string
	// Duration is how long the call ran; it is written as duration_ms, a
	// number of milliseconds with microsecond precision.
	Duration time.Duration
	// Outcome is what happened (OutcomeOK, OutcomeError, OutcomeDenied,
	// OutcomeInvalid) and ErrorType the tool.ErrorType of a failure.
	Outcome, ErrorType string
	// PrevHash is the Hash of the record before (GenesisHash for the first)
	// and Hash this record's own hash. Append sets both.
	PrevHash, Hash string
}

// MarshalJSON writes r exactly as a log line holds it (without the newline),
// with r's PrevHash and Hash as they are.
func (r Record) MarshalJSON() ([]byte, error) {
	args := appendArguments(nil, r.Arguments)
	return appendRecord(nil, &r, args, r.PrevHash, r.Hash), nil
}

// Credential kinds of Auth.
const (
	AuthJWT    = "jwt"
	AuthAPIKey = "api_key"
	AuthLocal  = "local"
)

// Auth is how a call's principal was authenticated: Kind AuthJWT (Issuer
// and JTI of the token), AuthAPIKey (Key: the first 8 hex digits of the
// key's SHA-256), or AuthLocal (the caller's own environment: the CLI,
// stdio, HTTP without an auth block). It is written as "auth":
// {"kind":"jwt","issuer":…,"jti":…}, {"kind":"api_key","key":…} or
// {"kind":"local"}; a zero Auth is local.
type Auth struct {
	Kind, Issuer, JTI, Key string
}

type wireAuth struct {
	Kind   string `json:"kind"`
	Issuer string `json:"issuer"`
	JTI    string `json:"jti"`
	Key    string `json:"key"`
}

type wireRecord struct {
	Time       time.Time       `json:"time"`
	CallID     string          `json:"call_id"`
	Session    string          `json:"session"`
	Principal  string          `json:"principal"`
	Auth       wireAuth        `json:"auth"`
	Tool       string          `json:"tool"`
	Arguments  json.RawMessage `json:"arguments"`
	Decision   string          `json:"decision"`
	Rule       string          `json:"rule"`
	Mode       string          `json:"mode"`
	Approver   string          `json:"approver"`
	Scope      string          `json:"scope"`
	DurationMS float64         `json:"duration_ms"`
	Outcome    string          `json:"outcome"`
	ErrorType  string          `json:"error_type"`
	PrevHash   string          `json:"prev_hash"`
	Hash       string          `json:"hash"`
}

// UnmarshalJSON reads a log line. It does not check the hash (see Verify).
func (r *Record) UnmarshalJSON(b []byte) error {
	var w wireRecord
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	us := math.Round(w.DurationMS * 1000)
	if math.IsNaN(us) || us > math.MaxInt64/1000 || us < math.MinInt64/1000 {
		us = 0
	}
	*r = Record{
		Time: w.Time, CallID: w.CallID, Session: w.Session, Principal: w.Principal, Tool: w.Tool,
		Auth:      Auth{Kind: w.Auth.Kind, Issuer: w.Auth.Issuer, JTI: w.Auth.JTI, Key: w.Auth.Key},
		Arguments: w.Arguments, Decision: w.Decision, Rule: w.Rule, Mode: w.Mode, Approver: w.Approver,
		Scope: w.Scope, Duration: time.Duration(us) * time.Microsecond, Outcome: w.Outcome,
		ErrorType: w.ErrorType, PrevHash: w.PrevHash, Hash: w.Hash,
	}
	return nil
}

// appendRecord appends r's line (no newline) with args already prepared by
// appendArguments and the given prev_hash and hash values.
func appendRecord(b []byte, r *Record, args []byte, prev, hash string) []byte {
	b = appendFields(b, r, args, nil)
	b = appendString(b, prev)
	b = append(b, `,"hash":`...)
	b = appendString(b, hash)
	return append(b, '}')
}

// appendFields appends r's line up to the value of prev_hash: everything
// from the opening brace to `,"prev_hash":`. sc, when not nil, keeps the
// text of the last second written (see appendTimeIn).
func appendFields(b []byte, r *Record, args []byte, sc *secondText) []byte {
	// Each string's quotes are written with the text around it (see
	// appendStringBody).
	b = append(b, `{"time":"`...)
	b = appendTimeIn(b, r.Time, sc)
	b = appendStringBody(append(b, `","call_id":"`...), r.CallID)
	b = appendStringBody(append(b, `","session":"`...), r.Session)
	b = appendStringBody(append(b, `","principal":"`...), r.Principal)
	b = appendAuth(append(b, '"'), r.Auth)
	b = appendStringBody(append(b, `,"tool":"`...), r.Tool)
	b = append(append(b, `","arguments":`...), args...)
	b = appendStringBody(append(b, `,"decision":"`...), r.Decision)
	b = appendStringBody(append(b, `","rule":"`...), r.Rule)
	b = appendStringBody(append(b, `","mode":"`...), r.Mode)
	b = appendStringBody(append(b, `","approver":"`...), r.Approver)
	b = appendStringBody(append(b, `","scope":"`...), r.Scope)
	b = appendMillis(append(b, `","duration_ms":`...), r.Duration.Microseconds())
	b = appendStringBody(append(b, `,"outcome":"`...), r.Outcome)
	b = appendStringBody(append(b, `","error_type":"`...), r.ErrorType)
	return append(b, `","prev_hash":`...)
}

// appendTime appends t in UTC as t.UTC().AppendFormat(b, time.RFC3339Nano)
// does, by hand for the years 0 to 9999 (AppendFormat for the others).
func appendTime(b []byte, t time.Time) []byte { return appendTimeIn(b, t, nil) }

// secondText is the text of one second's date and time of day in UTC
// ("2006-01-02T15:04:05", years 0 to 9999), which a log's records, written
// many a second, mostly share: appendTimeIn writes it again only for
// another second.
type secondText struct {
	sec  int64 // seconds since the Unix epoch
	ok   bool  // text holds sec's text
	text [19]byte
}

// digitPairs holds the two decimal digits of each number below 100, at
// twice its value.
const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// appendTimeIn is appendTime, taking the date and time of day from sc when
// t is in the second sc holds, and leaving them in sc otherwise (sc may be
// nil).
func appendTimeIn(b []byte, t time.Time, sc *secondText) []byte {
	t = t.UTC()
	if sec := t.Unix(); sc != nil && sc.ok && sc.sec == sec {
		b = append(b, sc.text[:]...)
	} else {
		year, month, day := t.Date()
		if year < 0 || year > 9999 {
			return t.AppendFormat(b, time.RFC3339Nano)
		}
		hour, minute, second := t.Clock()
		two := func(n int) (byte, byte) { return digitPairs[2*n], digitPairs[2*n+1] }
		y1, y2 := two(year / 100)
		y3, y4 := two(year % 100)
		mo1, mo2 := two(int(month))
		d1, d2 := two(day)
		h1, h2 := two(hour)
		mi1, mi2 := two(minute)
		s1, s2 := two(second)
		b = append(b, y1, y2, y3, y4, '-', mo1, mo2, '-', d1, d2, 'T', h1, h2, ':', mi1, mi2, ':', s1, s2)
		if sc != nil {
			sc.sec, sc.ok = sec, true
			copy(sc.text[:], b[len(b)-len(sc.text):])
		}
	}
	if ns := t.Nanosecond(); ns != 0 {
		// Nine digits: one, then four pairs; then the trailing zeros cut.
		frac := [10]byte{'.', byte('0' + ns/1e8)}
		for i, p := range [4]int{ns / 1e6 % 100, ns / 1e4 % 100, ns / 100 % 100, ns % 100} {
			frac[2+2*i], frac[3+2*i] = digitPairs[2*p], digitPairs[2*p+1]
		}
		n := len(frac)
		for frac[n-1] == '0' {
			n--
		}
		b = append(b, frac[:n]...)
	}
	return append(b, 'Z')
}

// appendMillis appends us microseconds as a number of milliseconds, exactly
// as strconv.AppendFloat(float64(us)/1000, 'f', -1, 64) does (the shortest
// decimal that reads back as that float): in integers while us has at most
// 15 digits, where that decimal is the exact quotient.
func appendMillis(b []byte, us int64) []byte {
	const exact = 1e15
	if us <= -exact || us >= exact {
		return strconv.AppendFloat(b, float64(us)/1000, 'f', -1, 64)
	}
	if us < 0 {
		b, us = append(b, '-'), -us
	}
	b = strconv.AppendInt(b, us/1000, 10)
	frac := us % 1000
	if frac == 0 {
		return b
	}
	digits := [3]byte{'0' + byte(frac/100), '0' + byte(frac/10%10), '0' + byte(frac%10)}
	n := 3
	for digits[n-1] == '0' {
		n--
	}
	b = append(b, '.')
	return append(b, digits[:n]...)
}

// appendAuth appends the auth member of a record.
func appendAuth(b []byte, a Auth) []byte {
	b = append(b, `,"auth":{"kind":"`...)
	switch a.Kind {
	case AuthJWT:
		b = appendStringBody(b, a.Kind)
		b = appendStringBody(append(b, `","issuer":"`...), a.Issuer)
		b = appendStringBody(append(b, `","jti":"`...), a.JTI)
	case AuthAPIKey:
		b = appendStringBody(b, a.Kind)
		b = appendStringBody(append(b, `","key":"`...), a.Key)
	case "", AuthLocal:
		b = append(b, AuthLocal...) // plain: nothing to escape
	default:
		b = appendStringBody(b, a.Kind)
	}
	return append(b, `"}`...)
}

const hexDigits = "0123456789abcdef"

// hexPairs holds the two lowercase hex digits of each byte, at twice its
// value.
var hexPairs = func() (t [512]byte) {
	for i := range 256 {
		t[2*i], t[2*i+1] = hexDigits[i>>4], hexDigits[i&0xf]
	}
	return t
}()

// appendHex appends sum in lowercase hex, as hex.AppendEncode does, a byte
// at a time through hexPairs.
func appendHex(b []byte, sum *[32]byte) []byte {
	n := len(b)
	b = append(b, make([]byte, 64)...)
	h := b[n : n+64]
	for i, c := range sum {
		h[2*i], h[2*i+1] = hexPairs[2*int(c)], hexPairs[2*int(c)+1]
	}
	return b
}

// appendString appends s as a JSON string: '"', '\\' and control characters
// are escaped (\n, \r, \t, else \u00XX), U+2028 and U+2029 are escaped, and
// invalid UTF-8 becomes U+FFFD; everything else is written as it is.
func appendString[T string | []byte](b []byte, s T) []byte {
	return append(appendStringBody(append(b, '"'), s), '"')
}

// appendStringBody appends what appendString writes between the quotes.
func appendStringBody[T string | []byte](b []byte, s T) []byte {
	if jsonstr.IsPlain(s) { // the common case: nothing to escape
		return append(b, s...)
	}
	start := 0
	for i := 0; i < len(s); {
		if i += jsonstr.Plain(s[i:]); i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		var r rune
		var size int
		switch v := any(s).(type) {
		case string:
			r, size = utf8.DecodeRuneInString(v[i:])
		case []byte:
			r, size = utf8.DecodeRune(v[i:])
		}
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(b, s[start:]...)
}

// appendArguments appends the logged form of raw arguments (see
// Record.Arguments).
func appendArguments(b, raw []byte) []byte {
	src := bytes.TrimSpace(raw)
	if len(src) == 0 {
		return append(b, "null"...)
	}
	start := len(b)
	b, ok := appendCompact(b, src)
	switch {
	case !ok:
		b = b[:start]
		if len(raw) <= MaxStringLen && utf8.Valid(raw) {
			return appendString(b, raw)
		}
		return appendDigest(b, raw)
	case len(b)-start > MaxArgumentsLen:
		return appendDigest(b[:start], raw)
	}
	return b
}

// appendDigest appends {"sha256":"<hex>","len":N} for p.
func appendDigest(b, p []byte) []byte {
	sum := sha256.Sum256(p)
	b = append(b, `{"sha256":"`...)
	b = hex.AppendEncode(b, sum[:])
	b = append(b, `","len":`...)
	b = strconv.AppendInt(b, int64(len(p)), 10)
	return append(b, '}')
}

// maxDepth is how deeply encoding/json lets values nest (json.Valid refuses
// deeper ones).
const maxDepth = 10000

// appendCompact appends src without insignificant white space, replacing
// string values (not object keys) longer than MaxStringLen bytes by their
// digest, in one pass that also checks src: ok is false, and b holds
// garbage past its length on entry, unless src is exactly one JSON value as
// json.Valid accepts it (strings may hold invalid UTF-8). It appends at most
// MaxArgumentsLen+1 bytes: once over, what it appended is garbage of that
// length, to be replaced by a digest.
func appendCompact(b, src []byte) (_ []byte, ok bool) {
	c := compactor{src: src, b: b, max: len(b) + MaxArgumentsLen + 1}
	ok = c.value(0) && c.space() == len(src)
	return c.b, ok
}

// compactor is appendCompact's state: the input, the next byte to read, the
// output and its bound.
type compactor struct {
	src []byte
	i   int
	b   []byte
	max int

	digest [100]byte // a string's digest before it is put
}

// put appends p, as much of it as fits under c.max.
func (c *compactor) put(p ...byte) {
	if n := c.max - len(c.b); len(p) > n {
		p = p[:max(n, 0)]
	}
	c.b = append(c.b, p...)
}

// space skips JSON white space and returns the index of the next byte.
func (c *compactor) space() int {
	for c.i < len(c.src) {
		switch c.src[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return c.i
		}
	}
	return c.i
}

// value appends the value at c.i, nested in depth containers.
func (c *compactor) value(depth int) bool {
	if c.space() == len(c.src) {
		return false
	}
	switch ch := c.src[c.i]; ch {
	case '{', '[':
		if depth++; depth > maxDepth {
			return false
		}
		end := byte('}')
		if ch == '[' {
			end = ']'
		}
		c.put(ch)
		c.i++
		if c.space() < len(c.src) && c.src[c.i] == end {
			c.put(end)
			c.i++
			return true
		}
		for {
			if ch == '{' {
				if c.space() == len(c.src) || c.src[c.i] != '"' {
					return false
				}
				tok, _, _ := c.str()
				if tok == nil || c.space() == len(c.src) || c.src[c.i] != ':' {
					return false
				}
				c.put(tok...)
				c.put(':')
				c.i++
			}
			if !c.value(depth) || c.space() == len(c.src) {
				return false
			}
			switch c.src[c.i] {
			case ',':
				c.put(',')
				c.i++
			case end:
				c.put(end)
				c.i++
				return true
			default:
				return false
			}
		}
	case '"':
		tok, escaped, ascii := c.str()
		if tok == nil {
			return false
		}
		// Escapes only shorten a string, so the decoded length is needed
		// only for a long escaped string or for invalid UTF-8 (which a
		// decoder turns into U+FFFD).
		value := tok[1 : len(tok)-1]
		if (escaped && len(value) > MaxStringLen) || (!ascii && !utf8.Valid(value)) {
			var s string
			if json.Unmarshal(tok, &s) == nil {
				value = []byte(s)
			}
		}
		if len(value) > MaxStringLen {
			c.put(appendDigest(c.digest[:0], value)...)
		} else {
			c.put(tok...)
		}
		return true
	case 't':
		return c.literal("true")
	case 'f':
		return c.literal("false")
	case 'n':
		return c.literal("null")
	}
	return c.number()
}

// str reads the string at c.i (its opening quote) and returns it with its
// quotes, whether it holds an escape and whether it is all ASCII; tok is
// nil when the string is not valid JSON.
func (c *compactor) str() (tok []byte, escaped, ascii bool) {
	src, start := c.src, c.i
	ascii = true
	for i := start + 1; i < len(src); i++ {
		// Up to the first byte that is not plain (the closing quote, an
		// escape, a control or non-ASCII byte), eight at a time.
		if i += jsonstr.Plain(src[i:]); i == len(src) {
			break
		}
		switch ch := src[i]; {
		case ch == '"':
			c.i = i + 1
			return src[start:c.i], escaped, ascii
		case ch == '\\':
			escaped = true
			if i++; i == len(src) {
				return nil, false, false
			}
			switch src[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(src) {
					return nil, false, false
				}
				for _, h := range src[i+1 : i+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return nil, false, false
					}
				}
				i += 4
			default:
				return nil, false, false
			}
		case ch < 0x20:
			return nil, false, false
		case ch >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false, false
}

// literal reads true, false or null.
func (c *compactor) literal(word string) bool {
	if !bytes.HasPrefix(c.src[c.i:], []byte(word)) {
		return false
	}
	c.put(c.src[c.i : c.i+len(word)]...)
	c.i += len(word)
	return true
}

// number reads a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (c *compactor) number() bool {
	src, start := c.src, c.i
	i := start
	digits := func() bool {
		j := i
		for i < len(src) && '0' <= src[i] && src[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < len(src) && src[i] == '-' {
		i++
	}
	switch {
	case i < len(src) && src[i] == '0':
		i++
	case !digits():
		return false
	}
	if i < len(src) && src[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	c.put(src[start:i]...)
	c.i = i
	return true
}
