package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func digest(p string) string {
	sum := sha256.Sum256([]byte(p))
	return fmt.Sprintf(`{"sha256":"%s","len":%d}`, hex.EncodeToString(sum[:]), len(p))
}

func TestArguments(t *testing.T) {
	long := strings.Repeat("x", MaxStringLen+1)
	edge := strings.Repeat("y", MaxStringLen)
	// 200 escaped newlines: 400 bytes on the wire, 200 once decoded.
	escaped := strings.Repeat(`\n`, 200)
	escapedLong := strings.Repeat(`\u00e9`, 129) // 258 bytes decoded
	many := `{` + strings.Repeat(`"k":"`+edge+`",`, 20) + `"end":1}`
	tests := []struct{ in, want string }{
		{``, `null`},
		{`  `, `null`},
		{`{ "a" : [1, 2, {"b": "c d"}], "t": true }`, `{"a":[1,2,{"b":"c d"}],"t":true}`},
		{`{"text":"` + long + `"}`, `{"text":` + digest(long) + `}`},
		{`{"text":"` + edge + `"}`, `{"text":"` + edge + `"}`},
		{`{"` + long + `":1}`, `{"` + long + `":1}`}, // a key is kept
		{`["` + long + `", 1]`, `[` + digest(long) + `,1]`},
		{`{"s":"` + escaped + `"}`, `{"s":"` + escaped + `"}`},
		{`{"s":"` + escapedLong + `"}`, `{"s":` + digest(strings.Repeat("é", 129)) + `}`},
		{many, digest(many)},
		{`{"a": 1`, `"{\"a\": 1"`},                 // malformed: kept as a string
		{"\xff\xfe{", digest("\xff\xfe{")},         // malformed, not UTF-8
		{`{"a":"` + long, digest(`{"a":"` + long)}, // malformed, long
		{`"just a string"`, `"just a string"`},
	}
	for _, tc := range tests {
		got := string(appendArguments(nil, []byte(tc.in)))
		if got != tc.want {
			t.Errorf("appendArguments(%.60q…)\n got %.200s\nwant %.200s", tc.in, got, tc.want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("appendArguments(%.60q) = %.200s: not JSON", tc.in, got)
		}
		if again := string(appendArguments(nil, []byte(got))); again != got {
			t.Errorf("not idempotent: %.200s → %.200s", got, again)
		}
	}
}

func TestStrings(t *testing.T) {
	for _, s := range []string{"", "plain", "quote \" back \\ slash", "ctl \x00\x01\x1f\t\r\n", "é ü 日本 😀", "\u2028\u2029", "bad \xff utf8", "<html>&"} {
		b := appendString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("appendString(%q) = %s: %v", s, b, err)
		}
		want := strings.ToValidUTF8(s, "\uFFFD")
		if got != want {
			t.Errorf("appendString(%q) decodes to %q", s, got)
		}
		if bytes.ContainsAny(b, "\n\r\u2028") {
			t.Errorf("appendString(%q) = %q holds a line break", s, b)
		}
	}
}

func TestTail(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	l, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 300
	for i := range n {
		rec := testRecord(i)
		// Lines of about 3 KiB, so that lines straddle Tail's 64 KiB chunks.
		rec.Arguments = json.RawMessage(fmt.Sprintf(`{"i":%d,"pad":[%s"x"]}`, i, strings.Repeat(`"`+strings.Repeat("p", 250)+`",`, 11)))
		if err := l.Append(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	f := mustOpen(t, path)
	for _, k := range []int{0, 1, 7, 25, 26, 100, n, n + 50} {
		recs, err := Tail(f, k)
		if err != nil {
			t.Fatal(err)
		}
		want := min(k, n)
		if len(recs) != want {
			t.Fatalf("Tail(%d): %d records, want %d", k, len(recs), want)
		}
		for j, r := range recs {
			if wantID := fmt.Sprintf("call-%d", n-want+j); r.CallID != wantID {
				t.Fatalf("Tail(%d)[%d] = %s, want %s", k, j, r.CallID, wantID)
			}
		}
	}

	// A torn last line is skipped.
	b, _ := os.ReadFile(path)
	torn := filepath.Join(dir, "torn.jsonl")
	os.WriteFile(torn, b[:len(b)-100], 0o600)
	recs, err := Tail(mustOpen(t, torn), 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].CallID != "call-297" || recs[1].CallID != "call-298" {
		t.Fatalf("Tail of a torn log = %v", recs)
	}
}

// TestTailWhile checks that TailWhile returns the last records up to the
// first one its predicate rejects, reading that one's time from the start
// of its line without decoding it, and reads nothing older.
func TestTailWhile(t *testing.T) {
	path := writeLog(t, 40)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	line := func(fields map[string]any) string {
		j, err := json.Marshal(fields)
		if err != nil {
			t.Fatal(err)
		}
		return string(j) + "\n"
	}
	at := func(i int) time.Time { return testRecord(i).Time }
	// call-29 is late: newer than every other record, so a TailWhile that
	// read past call-30 would return it.
	lines[29] = line(map[string]any{"time": at(45), "call_id": "call-29"})
	// call-30's JSON is broken after its time: its time must be read from
	// the line's start, or TailWhile goes past it to call-29.
	lines[30] = lines[30][:len(`{"time":"2026-01-02T03:04:05.00003Z"`)] + ",{not json\n"
	// call-35's line does not start with its time: it is decoded to learn it.
	lines[35] = line(map[string]any{"call_id": "call-35", "time": at(35)})
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		n     int
		since time.Time
		want  []int // call numbers, oldest first
	}{
		{256, at(38), []int{38, 39}},
		{256, at(40), nil},
		{2, at(0), []int{38, 39}},
		{256, at(36), []int{36, 37, 38, 39}},
		{256, at(35), []int{35, 36, 37, 38, 39}},
		{256, at(31), []int{31, 32, 33, 34, 35, 36, 37, 38, 39}},
		{256, at(29), []int{29, 31, 32, 33, 34, 35, 36, 37, 38, 39}}, // call-30 is not a record; call-28 stops it
	}
	for _, tc := range tests {
		recs, err := TailWhile(mustOpen(t, path), tc.n, func(t time.Time) bool { return !t.Before(tc.since) })
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, r := range recs {
			var i int
			fmt.Sscanf(r.CallID, "call-%d", &i)
			got = append(got, i)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("TailWhile(%d, since %v): %v, want %v", tc.n, tc.since, got, tc.want)
		}
	}
}

func TestSelect(t *testing.T) {
	path := writeLog(t, 30)
	since := time.Date(2026, 1, 2, 3, 4, 5, 10*1000, time.UTC)
	tests := []struct {
		q    Query
		want []int
	}{
		{Query{Tool: "run", Outcome: OutcomeDenied}, []int{14, 29}},
		{Query{Session: "s1", Since: since, Limit: 2}, []int{25, 28}},
		{Query{Decision: DecisionDeny, Until: since}, []int{4, 9}},
		{Query{Tool: "nope"}, nil},
	}
	for _, tc := range tests {
		recs, err := Select(mustOpen(t, path), tc.q)
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, r := range recs {
			var i int
			fmt.Sscanf(r.CallID, "call-%d", &i)
			got = append(got, i)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("Select(%+v) = %v, want %v", tc.q, got, tc.want)
		}
	}
}

func TestVerifyLongLines(t *testing.T) {
	// A line longer than Verify's read buffer still verifies.
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := testRecord(0)
	rec.Rule = strings.Repeat("r", 3<<20)
	for range 3 {
		if err := l.Append(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	if rep := verifyFile(t, path); !rep.OK || rep.Records != 3 {
		t.Fatalf("report = %+v", rep)
	}
	// And the head is found again behind it.
	l, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(context.Background(), testRecord(1)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if rep := verifyFile(t, path); !rep.OK || rep.Records != 4 {
		t.Fatalf("report = %+v", rep)
	}
}
