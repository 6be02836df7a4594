package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/internal/jsonstr"
)

// refArguments is the arguments encoder the package had before its one-pass
// compactor: json.Valid, then a compaction that trusts its input. The
// compactor must write exactly what it wrote.
func refArguments(b, raw []byte) []byte {
	src := bytes.TrimSpace(raw)
	if len(src) == 0 {
		return append(b, "null"...)
	}
	if !json.Valid(src) {
		if len(raw) <= MaxStringLen && utf8.Valid(raw) {
			return appendString(b, raw)
		}
		return appendDigest(b, raw)
	}
	start := len(b)
	b = refCompact(b, src)
	if len(b)-start > MaxArgumentsLen {
		b = appendDigest(b[:start], raw)
	}
	return b
}

func refCompact(b, src []byte) []byte {
	for i := 0; i < len(src); {
		switch c := src[i]; c {
		case ' ', '\t', '\n', '\r':
			i++
		case '"':
			end := i + 1
			escaped := false
			for src[end] != '"' {
				if src[end] == '\\' {
					escaped = true
					end++
				}
				end++
			}
			end++
			tok := src[i:end]
			i = end
			j := end
			for j < len(src) && (src[j] == ' ' || src[j] == '\t' || src[j] == '\n' || src[j] == '\r') {
				j++
			}
			if j < len(src) && src[j] == ':' {
				b = append(b, tok...)
				continue
			}
			value := tok[1 : len(tok)-1]
			if (escaped && len(value) > MaxStringLen) || !utf8.Valid(value) {
				var s string
				if json.Unmarshal(tok, &s) == nil {
					value = []byte(s)
				}
			}
			if len(value) > MaxStringLen {
				b = appendDigest(b, value)
			} else {
				b = append(b, tok...)
			}
		default:
			j := i + 1
			for j < len(src) && src[j] != '"' && src[j] != ' ' && src[j] != '\t' && src[j] != '\n' && src[j] != '\r' {
				j++
			}
			b = append(b, src[i:j]...)
			i = j
		}
	}
	return b
}

// argumentCases are arguments of every kind the encoder tells apart: valid
// JSON of each type, white space, keys and values around the length limits,
// escapes, unicode and invalid UTF-8, numbers at the edges of the grammar,
// nesting at encoding/json's limit, and almost-JSON that json.Valid refuses.
func argumentCases() []string {
	long := strings.Repeat("x", MaxStringLen+1)
	edge := strings.Repeat("y", MaxStringLen)
	deep := func(n int, open, close string) string { return strings.Repeat(open, n) + strings.Repeat(close, n) }
	cases := []string{
		``, ` `, "\t\r\n", `null`, ` null `, `true`, `false`, `0`, `-0`, `1.5e+10`, `"s"`, `[]`, `{}`, `[ ]`, `{ }`,
		`{"a":1}`, `{ "a" : 1 , "b" : [ 1 , 2 ] }`, "{\n\t\"path\": \"a b.txt\",\r\n\"n\": 3\n}",
		`{"a":[1,"x",{"b":null,"c":true,"d":false}]}`, `[[[[]]]]`, `[{},{"a":{}}]`,
		`{"k":"` + long + `"}`, `{"k":"` + edge + `"}`, `{"` + long + `":"` + long + `"}`, `["` + long + `","` + edge + `"]`,
		`{"k":"` + strings.Repeat(`\n`, 200) + `"}`, `{"k":"` + strings.Repeat(`\u00e9`, 129) + `"}`,
		`{"k":"` + strings.Repeat(`\\`, 129) + `"}`, `{"k":"` + strings.Repeat(`\"`, 300) + `"}`,
		`{"k":"` + strings.Repeat("é", 129) + `"}`, `{"k":"` + strings.Repeat("日", 86) + `"}`, `{"k":"😀\u2028\u2029"}`,
		"{\"k\":\"bad \xff utf8\"}", "{\"k\":\"" + strings.Repeat("\xff", 100) + "\"}", "{\"k\":\"" + strings.Repeat("\xc3", 300) + "\"}",
		"{\"k\":\"\xed\xa0\x80\"}", `{"k":"\ud800"}`, `{"k":"\uD83D\uDE00"}`, `{"k":"\/\b\f\n\r\t"}`,
		`{"a":` + strings.Repeat(`{"b":`, 50) + `1` + strings.Repeat(`}`, 50) + `}`,
		`{"big":"` + strings.Repeat("z", 5000) + `"}`, `{` + strings.Repeat(`"k":"`+edge+`",`, 20) + `"end":1}`,
		`[` + strings.Repeat(`1,`, 2100) + `1]`, `[` + strings.Repeat(`"ab",`, 1000) + `""]`,
		`{"` + strings.Repeat("k", 9000) + `":1}`, `[` + strings.Repeat("9", 9000) + `]`, `[` + strings.Repeat("9", 9000) + `x]`,
		`{"a":"` + strings.Repeat("b", 4000) + `","c":"` + strings.Repeat("d", 200) + `"}`, `[` + strings.Repeat(`true,`, 900) + `null]`,
		deep(maxDepth, "[", "]"), deep(maxDepth+1, "[", "]"), deep(maxDepth-1, `{"a":`, "}") + "",
		// almost JSON
		`{`, `}`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[,1]`, `{,}`, `{"a" 1}`, `{a:1}`, `{'a':1}`, `[1 2]`,
		`01`, `-`, `-01`, `1.`, `.5`, `1e`, `1e+`, `+1`, `1.5e`, `0x10`, `NaN`, `Infinity`, `-Infinity`, `1_000`,
		`tru`, `nul`, `falsey`, `True`, `nulll`, `[true false]`, `"unterminated`, `"a" "b"`, `{}{}`, `{} x`, `[]]`,
		"\"ctl \x01\"", "\"tab \t\"", `"bad \x escape"`, `"\u12"`, `"\u12g4"`, `"\u"`, `"\`, `"\u0041"`, `"\U0041"`,
		"\"\\u\x10\x10\x10\x10\"", `{"a":1}}`, `[1]]`, `{"a":[}`, `{"a":1 "b":2}`,
		"\v{}", "{}\v", "\u00a0{}\u00a0", "\x85[1]", "\xef\xbb\xbf{}", "{}\x00", "\x00",
		`not json`, "\xff", "\xff\xfe{", `{"a":"` + long, strings.Repeat("w", MaxStringLen), strings.Repeat("w", MaxStringLen+1),
		"é" + strings.Repeat("w", MaxStringLen-2), `{"a": 1`, `"just a string"`,
	}
	// Random JSON-ish strings assembled from tokens: valid and not.
	toks := []string{`{`, `}`, `[`, `]`, `:`, `,`, ` `, "\n", `"k"`, `"v\n"`, `1`, `-2.5e3`, `true`, `null`, `"` + long + `"`, `"é\u00e9"`, "\"\xff\"", `0`, `"a\"b"`}
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		var sb strings.Builder
		for range 1 + r.IntN(12) {
			sb.WriteString(toks[r.IntN(len(toks))])
		}
		cases = append(cases, sb.String())
	}
	// Random valid documents.
	for range 1000 {
		v := randomValue(r, 0)
		b, _ := json.Marshal(v)
		cases = append(cases, string(b))
		ib, _ := json.MarshalIndent(v, " ", "\t")
		cases = append(cases, string(ib))
	}
	return cases
}

func randomValue(r *rand.Rand, depth int) any {
	switch n := r.IntN(8); {
	case depth < 4 && n == 0:
		m := map[string]any{}
		for range r.IntN(5) {
			m[randomString(r)] = randomValue(r, depth+1)
		}
		return m
	case depth < 4 && n == 1:
		a := make([]any, r.IntN(5))
		for i := range a {
			a[i] = randomValue(r, depth+1)
		}
		return a
	case n == 2:
		return r.NormFloat64() * 1e6
	case n == 3:
		return r.IntN(3) == 0
	case n == 4:
		return nil
	}
	return randomString(r)
}

func randomString(r *rand.Rand) string {
	parts := []string{"a", "é", "日本", "😀", "\n", "\"", "\\", "<>&", "\u2028", "\x00", "\x1f", " ", strings.Repeat("q", 100)}
	var sb strings.Builder
	for range r.IntN(8) {
		sb.WriteString(parts[r.IntN(len(parts))])
	}
	return sb.String()
}

// TestArgumentsAsBefore: the one-pass compactor writes byte for byte what
// json.Valid and the former compaction wrote, for valid and invalid input.
func TestArgumentsAsBefore(t *testing.T) {
	for _, in := range argumentCases() {
		want := refArguments(nil, []byte(in))
		got := appendArguments([]byte("prefix"), []byte(in))
		if string(got[:6]) != "prefix" || !bytes.Equal(got[6:], want) {
			t.Errorf("appendArguments(%.80q)\n got %.200s\nwant %.200s", in, got[6:], want)
		}
		out, ok := appendCompact(nil, bytes.TrimSpace([]byte(in)))
		if valid := json.Valid(bytes.TrimSpace([]byte(in))); ok != valid {
			t.Errorf("appendCompact(%.80q) ok = %v, json.Valid = %v", in, ok, valid)
		}
		if len(out) > MaxArgumentsLen+1 { // however large the arguments, the buffer stays small
			t.Errorf("appendCompact(%.80q) appended %d bytes", in, len(out))
		}
	}
}

// FuzzArgumentsAsBefore is TestArgumentsAsBefore over any input.
func FuzzArgumentsAsBefore(f *testing.F) {
	for _, s := range argumentCases()[:200] {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		want := refArguments(nil, raw)
		if got := appendArguments(nil, raw); !bytes.Equal(got, want) {
			t.Fatalf("appendArguments(%q)\n got %s\nwant %s", raw, got, want)
		}
		src := bytes.TrimSpace(raw)
		if _, ok := appendCompact(nil, src); ok != json.Valid(src) {
			t.Fatalf("appendCompact(%q) ok = %v, json.Valid disagrees", src, ok)
		}
	})
}

// timeCases are instants whose RFC 3339 forms differ in every field: each
// length of fraction, the year's edges (and years AppendFormat writes
// another way), leap days, zones other than UTC.
func timeCases() []time.Time {
	est := time.FixedZone("EST", -5*3600)
	odd := time.FixedZone("odd", 5*3600+1800+17)
	ts := []time.Time{
		{}, time.Unix(0, 0), time.Unix(0, 1), time.Unix(-1, 0), time.Unix(1<<40, 999999999),
		time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), time.Date(2026, 1, 2, 3, 4, 5, 500000000, time.UTC),
		time.Date(2026, 12, 31, 23, 59, 59, 999999999, time.UTC), time.Date(2024, 2, 29, 12, 0, 0, 100, time.UTC),
		time.Date(2000, 2, 29, 0, 0, 0, 10, est), time.Date(1900, 3, 1, 0, 0, 0, 1000, odd),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 1, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 6, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-10000, 6, 1, 0, 0, 0, 5, time.UTC), time.Date(1969, 12, 31, 23, 59, 59, 123456789, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 0, est).Add(time.Nanosecond), time.Now(), time.Now().In(est),
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		sec := r.Int64N(400*365*86400) - 200*365*86400 // around 1770-2170
		ns := []int64{0, r.Int64N(1e9), r.Int64N(1000) * 1e6, r.Int64N(1e6) * 1e3, r.Int64N(10) * 1e8}[r.IntN(5)]
		ts = append(ts, time.Unix(sec, ns))
	}
	return ts
}

// TestTimeAsBefore: appendTime writes what AppendFormat(RFC3339Nano) of the
// time in UTC writes.
func TestTimeAsBefore(t *testing.T) {
	for _, tm := range timeCases() {
		want := tm.UTC().AppendFormat([]byte("x"), time.RFC3339Nano)
		if got := appendTime([]byte("x"), tm); !bytes.Equal(got, want) {
			t.Errorf("appendTime(%v) = %s, want %s", tm, got, want)
		}
	}
}

// FuzzTimeAsBefore is TestTimeAsBefore over any instant.
func FuzzTimeAsBefore(f *testing.F) {
	f.Add(int64(0), int64(0))
	f.Add(int64(1767225600), int64(500))
	f.Add(int64(-62135596800), int64(999999999))
	f.Fuzz(func(t *testing.T, sec, ns int64) {
		tm := time.Unix(sec, ns)
		want := tm.UTC().AppendFormat(nil, time.RFC3339Nano)
		if got := appendTime(nil, tm); !bytes.Equal(got, want) {
			t.Fatalf("appendTime(%d, %d) = %s, want %s", sec, ns, got, want)
		}
	})
}

// refString is the string encoder the package had before its table.
func refString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
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
		r, size := utf8.DecodeRuneInString(s[i:])
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
	b = append(b, s[start:]...)
	return append(b, '"')
}

// refRecord is the line the package wrote before (encoding by the former
// time, string and arguments encoders), hash rule included.
func refRecord(r Record, prev string) []byte {
	var b []byte
	field := func(name, v string) { b = refString(append(b, `,"`+name+`":`...), v) }
	b = append(b, `{"time":"`...)
	b = r.Time.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	field("call_id", r.CallID)
	field("session", r.Session)
	field("principal", r.Principal)
	b = append(b, `,"auth":{"kind":`...)
	switch r.Auth.Kind {
	case AuthJWT:
		b = refString(b, r.Auth.Kind)
		field("issuer", r.Auth.Issuer)
		field("jti", r.Auth.JTI)
	case AuthAPIKey:
		b = refString(b, r.Auth.Kind)
		field("key", r.Auth.Key)
	case "", AuthLocal:
		b = refString(b, AuthLocal)
	default:
		b = refString(b, r.Auth.Kind)
	}
	b = append(b, '}')
	field("tool", r.Tool)
	b = refArguments(append(b, `,"arguments":`...), r.Arguments)
	field("decision", r.Decision)
	field("rule", r.Rule)
	field("mode", r.Mode)
	field("approver", r.Approver)
	field("scope", r.Scope)
	b = strconv.AppendFloat(append(b, `,"duration_ms":`...), float64(r.Duration.Microseconds())/1000, 'f', -1, 64)
	field("outcome", r.Outcome)
	field("error_type", r.ErrorType)
	field("prev_hash", prev)
	b = append(b, `,"hash":""}`...)
	sum := sha256.Sum256(b)
	return append(append(b[:len(b)-2], hex.EncodeToString(sum[:])...), '"', '}', '\n')
}

// hostileStrings are values a caller controls: quotes, escapes, control
// characters, line separators, invalid UTF-8, long and unicode text, and
// text that looks like the record's own members.
var hostileStrings = []string{
	"", "plain", `quote " back \ slash`, "ctl \x00\x01\x1f\x7f\t\r\n", "é ü 日本 😀", "\u2028\u2029", "bad \xff utf8 \xc3",
	"<html>&amp;", `","hash":"` + GenesisHash + `"}`, "\n{\"time\":\"2026\"}\n", strings.Repeat("長", 400), "\xed\xa0\x80",
	strings.Repeat(`\"`, 100), "\ufeff", "tab\tand\vform\ffeed", "\x1b[31mred\x1b[0m",
}

// recordCases are records of every shape: each auth kind, hostile strings
// in every field, arguments from argumentCases, times and durations at
// their edges.
func recordCases() []Record {
	args := argumentCases()
	times := timeCases()
	auths := []Auth{{}, {Kind: AuthLocal}, {Kind: AuthJWT, Issuer: "https://issuer", JTI: "j\"ti"}, {Kind: AuthAPIKey, Key: "0badc0de"}, {Kind: "other\n", Issuer: "x"}}
	durations := []time.Duration{0, 1, time.Microsecond, 1500 * time.Microsecond, -time.Millisecond, time.Hour, 1<<63 - 1, -1 << 63}
	r := rand.New(rand.NewPCG(5, 6))
	pick := func() string { return hostileStrings[r.IntN(len(hostileStrings))] }
	var recs []Record
	for i := range 3000 {
		tm := times[i%len(times)]
		if tm.IsZero() { // Append would write the current time
			tm = time.Unix(1, 0)
		}
		recs = append(recs, Record{
			Time: tm, CallID: pick(), Session: pick(), Principal: pick(), Tool: pick(),
			Auth: auths[i%len(auths)], Arguments: json.RawMessage(args[(i*7)%len(args)]),
			Decision: pick(), Rule: pick(), Mode: pick(), Approver: pick(), Scope: pick(),
			Duration: durations[i%len(durations)], Outcome: pick(), ErrorType: pick(),
		})
	}
	return recs
}

// TestLogWritesAsBefore appends records of every shape to a real log and
// checks each line byte for byte against the former encoder, and that the
// log verifies and reads back.
func TestLogWritesAsBefore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, Options{SyncInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	recs := recordCases()
	for _, rec := range recs {
		if err := l.Append(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, path)
	if len(lines) != len(recs) {
		t.Fatalf("%d lines for %d records", len(lines), len(recs))
	}
	prev := GenesisHash
	for i, line := range lines {
		want := refRecord(recs[i], prev)
		if !bytes.Equal(line, want) {
			t.Fatalf("record %d:\n got %.300s\nwant %.300s", i, line, want)
		}
		var back Record
		err := json.Unmarshal(line, &back)
		if y := recs[i].Time.UTC().Year(); err != nil && y >= 0 && y <= 9999 { // RFC 3339 has four-digit years
			t.Fatalf("record %d does not read back: %v", i, err)
		}
		prev = string(line[len(line)-67 : len(line)-3])
	}
	if rep := verifyFile(t, path); !rep.OK || rep.Records != len(recs) {
		t.Fatalf("the log does not verify: %+v", rep)
	}
}

// TestPlainTable: appendString copies as they are exactly the bytes the
// former encoder copied (jsonstr.Plain's).
func TestPlainTable(t *testing.T) {
	for c := range 256 {
		plain := jsonstr.Plain([]byte{byte(c)}) == 1
		if want := c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\'; plain != want {
			t.Errorf("plain[%#x] = %v, want %v", c, plain, want)
		}
	}
}

// FuzzRecordAsBefore: any record's line is the former encoder's.
func FuzzRecordAsBefore(f *testing.F) {
	for i, s := range hostileStrings {
		f.Add(s, s+"x", []byte(argumentCases()[i]), int64(i)*1e15, int64(i)*12345)
	}
	f.Fuzz(func(t *testing.T, s1, s2 string, args []byte, unixNano, dur int64) {
		rec := Record{Time: time.Unix(0, unixNano), CallID: s1, Session: s2, Principal: s1 + s2, Tool: s2,
			Auth: Auth{Kind: AuthJWT, Issuer: s1, JTI: s2}, Arguments: args, Decision: s1, Rule: s2,
			Mode: s1, Approver: s2, Scope: s1, Duration: time.Duration(dur), Outcome: s2, ErrorType: s1}
		want := refRecord(rec, GenesisHash)
		got := appendRecord(nil, &rec, appendArguments(nil, rec.Arguments), GenesisHash, "")
		sum := sha256.Sum256(got)
		got = append(append(got[:len(got)-2], hex.EncodeToString(sum[:])...), '"', '}', '\n')
		if !bytes.Equal(got, want) {
			t.Fatalf("\n got %s\nwant %s", got, want)
		}
	})
}

// stringCases are strings of every length up to 40 made of bytes appendString
// treats each its own way (plain ASCII, '"', '\\', control characters, DEL,
// UTF-8 of two, three and four bytes, U+2028, U+2029, invalid bytes), at
// every position, so that each lies in an eight-byte word, in the short
// tail and across both.
func stringCases() []string {
	parts := []string{"a", "Z", " ", "~", "\x7f", `"`, `\`, "\x00", "\x1f", "\n", "\t", "é", "日", "😀",
		"\u2028", "\u2029", "\xff", "\xc3", "\xed\xa0\x80", "<", "&"}
	cases := append([]string{}, hostileStrings...)
	r := rand.New(rand.NewPCG(7, 8))
	for n := range 41 {
		cases = append(cases, strings.Repeat("p", n))
		for _, p := range parts {
			for at := 0; at+len(p) <= n; at++ { // one special part at each place of a plain string
				cases = append(cases, strings.Repeat("p", at)+p+strings.Repeat("q", n-at-len(p)))
			}
		}
		for range 200 {
			var sb strings.Builder
			for sb.Len() < n {
				if r.IntN(4) == 0 {
					sb.WriteString(parts[r.IntN(len(parts))])
				} else {
					sb.WriteByte(byte(0x20 + r.IntN(0x60)))
				}
			}
			cases = append(cases, sb.String())
		}
	}
	return cases
}

// TestStringAsBefore: appendString, of a string and of bytes, writes what the
// former encoder wrote.
func TestStringAsBefore(t *testing.T) {
	for _, s := range stringCases() {
		want := refString([]byte("x"), s)
		if got := appendString([]byte("x"), s); !bytes.Equal(got, want) {
			t.Errorf("appendString(%q) = %s, want %s", s, got, want)
		}
		if got := appendString([]byte("x"), []byte(s)); !bytes.Equal(got, want) {
			t.Errorf("appendString([]byte(%q)) = %s, want %s", s, got, want)
		}
		isp := true
		for i := 0; i < len(s); i++ {
			isp = isp && s[i] >= 0x20 && s[i] < utf8.RuneSelf && s[i] != '"' && s[i] != '\\'
		}
		if jsonstr.IsPlain(s) != isp {
			t.Errorf("isPlain(%q) = %v, want %v", s, !isp, isp)
		}
	}
}

// FuzzStringAsBefore is TestStringAsBefore over any string.
func FuzzStringAsBefore(f *testing.F) {
	for _, s := range hostileStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := appendString(nil, s), refString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("appendString(%q) = %s, want %s", s, got, want)
		}
	})
}

// TestHexAsBefore: appendHex writes what hex.AppendEncode writes.
func TestHexAsBefore(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	sums := [][32]byte{{}, sha256.Sum256(nil)}
	for i := range 256 {
		var s [32]byte
		for j := range s {
			s[j] = byte(i + j)
		}
		sums = append(sums, s)
	}
	for range 1000 {
		var s [32]byte
		for j := range s {
			s[j] = byte(r.Uint32())
		}
		sums = append(sums, s)
	}
	for _, s := range sums {
		if got, want := appendHex([]byte("x"), &s), hex.AppendEncode([]byte("x"), s[:]); !bytes.Equal(got, want) {
			t.Errorf("appendHex(%x) = %s, want %s", s, got, want)
		}
	}
}

// TestTimeInAsBefore: appendTimeIn writes what AppendFormat(RFC3339Nano)
// of the time in UTC writes, through one secondText, for times in the same
// second, in the next, back in an earlier one, and in years it does not
// keep.
func TestTimeInAsBefore(t *testing.T) {
	var sc secondText
	r := rand.New(rand.NewPCG(11, 12))
	times := timeCases()
	base := time.Date(2026, 12, 7, 19, 59, 58, 0, time.UTC)
	for i := range 5000 {
		switch r.IntN(4) {
		case 0: // the same second
			base = base.Truncate(time.Second).Add(time.Duration(r.Int64N(1e9)))
		case 1: // a later one
			base = base.Add(time.Duration(r.Int64N(3e9)))
		case 2: // an earlier one, in another zone
			base = base.Add(-time.Duration(r.Int64N(3e9))).In(time.FixedZone("z", -3600))
		default: // any
			base = times[i%len(times)]
		}
		want := base.UTC().AppendFormat([]byte("x"), time.RFC3339Nano)
		if got := appendTimeIn([]byte("x"), base, &sc); !bytes.Equal(got, want) {
			t.Fatalf("appendTimeIn(%v) = %s, want %s", base, got, want)
		}
	}
}

// TestLogWritesAsBeforeSameSecond is TestLogWritesAsBefore for records many
// a second, as a busy log writes them: the date and time of day are taken
// from the record before.
func TestLogWritesAsBeforeSameSecond(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, Options{SyncInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	recs := recordCases()
	tm := time.Date(2026, 12, 7, 23, 59, 59, 0, time.UTC)
	for i := range recs {
		tm = tm.Add(time.Duration(i%7) * 99_999_937)
		recs[i].Time = tm
		if err := l.Append(context.Background(), recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	prev := GenesisHash
	for i, line := range readLines(t, path) {
		if want := refRecord(recs[i], prev); !bytes.Equal(line, want) {
			t.Fatalf("record %d:\n got %.300s\nwant %.300s", i, line, want)
		}
		prev = string(line[len(line)-67 : len(line)-3])
	}
}
