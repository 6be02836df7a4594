package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// testRecord is the i-th record of a test log.
func testRecord(i int) Record {
	rec := Record{
		Time:      time.Date(2026, 1, 2, 3, 4, 5, i*1000, time.UTC),
		CallID:    fmt.Sprintf("call-%d", i),
		Session:   fmt.Sprintf("s%d", i%3),
		Principal: "alice",
		Tool:      []string{"read_file", "write_file", "run"}[i%3],
		Arguments: json.RawMessage(fmt.Sprintf(`{"path": "f%d.txt", "n": %d}`, i, i)),
		Decision:  DecisionAllow,
		Rule:      "Read(*)",
		Mode:      "default",
		Duration:  time.Duration(i) * 1500 * time.Microsecond,
		Outcome:   OutcomeOK,
	}
	if i%5 == 4 {
		rec.Decision, rec.Outcome, rec.ErrorType, rec.Rule = DecisionDeny, OutcomeDenied, "permission_denied", "deny Run(*)"
	}
	return rec
}

// writeLog creates a log of n records in a fresh directory.
func writeLog(t testing.TB, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := l.Append(context.Background(), testRecord(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func readLines(t testing.TB, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		t.Fatalf("%s does not end with a newline", path)
	}
	lines := bytes.SplitAfter(b, []byte{'\n'})
	return lines[:len(lines)-1]
}

func joinLines(lines [][]byte) []byte {
	var b []byte
	for _, l := range lines {
		b = append(b, bytes.TrimSuffix(l, []byte{'\n'})...)
		b = append(b, '\n')
	}
	return b
}

func verifyFile(t testing.TB, path string) Report {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := Verify(f)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func verifyBytes(t testing.TB, b []byte) Report {
	t.Helper()
	rep, err := Verify(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// forge returns a correctly hashed line for rec chained onto prev, as
// someone who knows the format (but cannot rewrite the whole log) could.
func forge(rec Record, prev string) []byte {
	b := appendRecord(nil, &rec, appendArguments(nil, rec.Arguments), prev, "")
	sum := sha256.Sum256(b)
	return append(appendRecord(nil, &rec, appendArguments(nil, rec.Arguments), prev, hex.EncodeToString(sum[:])), '\n')
}

func hashOf(t testing.TB, line []byte) string {
	t.Helper()
	var rec Record
	if err := json.Unmarshal(line, &rec); err != nil {
		t.Fatal(err)
	}
	return rec.Hash
}

func TestChainVerifies(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "audit.jsonl")
	l, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := l.Append(context.Background(), testRecord(i)); err != nil {
			t.Fatal(err)
		}
	}
	head := l.Head()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rep := verifyFile(t, path)
	if !rep.OK || rep.Records != 20 || rep.Lines != 20 || len(rep.Problems) != 0 {
		t.Fatalf("report = %+v", rep)
	}
	if rep.Head != head {
		t.Errorf("Head = %s, the log's head = %s", rep.Head, head)
	}
	if err := l.Append(context.Background(), testRecord(0)); err != ErrClosed {
		t.Errorf("Append after Close = %v, want ErrClosed", err)
	}
}

// TestHashRuleFromOutside recomputes every hash by the documented rule with
// nothing but a regular expression and SHA-256, and checks the member order.
func TestHashRuleFromOutside(t *testing.T) {
	lines := readLines(t, writeLog(t, 10))
	hashMember := regexp.MustCompile(`"hash":"([0-9a-f]{64})"}\n$`)
	prevMember := regexp.MustCompile(`"prev_hash":"([0-9a-f]{64})"`)
	want := GenesisHash
	for i, line := range lines {
		m := hashMember.FindSubmatchIndex(line)
		if m == nil {
			t.Fatalf("line %d: no hash member at the end: %s", i+1, line)
		}
		canonical := append(append([]byte{}, line[:m[2]]...), `"}`...)
		sum := sha256.Sum256(canonical)
		if got := string(line[m[2]:m[3]]); got != hex.EncodeToString(sum[:]) {
			t.Errorf("line %d: hash %s, recomputed %x", i+1, got, sum)
		}
		if prev := prevMember.FindSubmatch(line); prev == nil || string(prev[1]) != want {
			t.Errorf("line %d: prev_hash %q, want %s", i+1, prev, want)
		}
		want = string(line[m[2]:m[3]])

		dec := json.NewDecoder(bytes.NewReader(line))
		var keys []string
		tok, _ := dec.Token()
		for dec.More() && tok != nil {
			k, _ := dec.Token()
			keys = append(keys, k.(string))
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				t.Fatal(err)
			}
		}
		order := "[time call_id session principal auth tool arguments decision rule mode approver scope duration_ms outcome error_type prev_hash hash]"
		if fmt.Sprint(keys) != order {
			t.Fatalf("line %d: members %v, want %s", i+1, keys, order)
		}
	}
}

func TestRecordRoundTrip(t *testing.T) {
	lines := readLines(t, writeLog(t, 5))
	for i, line := range lines {
		var rec Record
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatal(err)
		}
		want := testRecord(i)
		if !rec.Time.Equal(want.Time) || rec.CallID != want.CallID || rec.Tool != want.Tool ||
			rec.Duration != want.Duration || rec.Decision != want.Decision || rec.Outcome != want.Outcome ||
			rec.ErrorType != want.ErrorType || string(rec.Arguments) != fmt.Sprintf(`{"path":"f%d.txt","n":%d}`, i, i) {
			t.Errorf("line %d decoded as %+v", i+1, rec)
		}
		out, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, bytes.TrimSuffix(line, []byte{'\n'})) {
			t.Errorf("line %d re-encoded differently:\n%s\n%s", i+1, out, line)
		}
	}
}

func TestVerifyFindsTampering(t *testing.T) {
	const n = 10
	orig := readLines(t, writeLog(t, n))
	clone := func() [][]byte {
		c := make([][]byte, len(orig))
		for i, l := range orig {
			c[i] = append([]byte{}, l...)
		}
		return c
	}
	prev := func(line int) string { // the hash of the record on a 1-based line
		if line == 0 {
			return GenesisHash
		}
		return hashOf(t, orig[line-1])
	}
	tests := []struct {
		name     string
		edit     func([][]byte) [][]byte
		line     int
		kind     string
		problems int
	}{
		{"one byte of a middle record", func(l [][]byte) [][]byte {
			i := bytes.Index(l[4], []byte("alice"))
			l[4][i] = 'A'
			return l
		}, 5, KindModified, 1},
		{"a byte of the hash", func(l [][]byte) [][]byte {
			i := bytes.LastIndex(l[6], []byte(`"hash":"`)) + 10
			l[6][i] ^= 1 // a hex digit to another one (0-1, 2-3, …, a-`: then not hex)
			if l[6][i] == '`' {
				l[6][i] = 'b'
			}
			return l
		}, 7, KindModified, 2}, // the next line's link breaks too
		{"a middle line deleted", func(l [][]byte) [][]byte {
			return append(l[:4], l[5:]...)
		}, 5, KindRemoved, 1},
		{"the first line deleted", func(l [][]byte) [][]byte { return l[1:] }, 1, KindRemoved, 1},
		{"two lines deleted", func(l [][]byte) [][]byte { return append(l[:3], l[5:]...) }, 4, KindRemoved, 1},
		{"two lines swapped", func(l [][]byte) [][]byte {
			l[4], l[5] = l[5], l[4]
			return l
		}, 5, KindReordered, 1},
		{"a line moved later", func(l [][]byte) [][]byte {
			x := l[2]
			l = append(l[:2], l[3:]...)
			return append(l[:6], append([][]byte{x}, l[6:]...)...)
		}, 3, KindReordered, 1},
		{"a line moved earlier", func(l [][]byte) [][]byte {
			x := l[7]
			l = append(l[:7], l[8:]...)
			return append(l[:2], append([][]byte{x}, l[2:]...)...)
		}, 3, KindReordered, 1},
		{"a forged record chained onto line 4", func(l [][]byte) [][]byte {
			return append(l[:4], append([][]byte{forge(testRecord(99), prev(4))}, l[4:]...)...)
		}, 5, KindInserted, 1},
		{"a forged record with a made-up prev_hash", func(l [][]byte) [][]byte {
			return append(l[:4], append([][]byte{forge(testRecord(99), strings.Repeat("ab", 32))}, l[4:]...)...)
		}, 5, KindInserted, 1},
		{"a forged first record", func(l [][]byte) [][]byte {
			return append(l[:6], append([][]byte{forge(testRecord(99), GenesisHash)}, l[6:]...)...)
		}, 7, KindInserted, 1},
		{"a duplicated line", func(l [][]byte) [][]byte {
			return append(l[:4], append([][]byte{l[3]}, l[4:]...)...)
		}, 5, KindInserted, 1},
		{"a line that is not JSON", func(l [][]byte) [][]byte {
			return append(l[:4], append([][]byte{[]byte("hello\n")}, l[4:]...)...)
		}, 5, KindInvalid, 1},
		{"an empty line", func(l [][]byte) [][]byte {
			return append(l[:4], append([][]byte{[]byte("\n")}, l[4:]...)...)
		}, 5, KindInvalid, 1},
		{"a record rewritten with a fresh hash", func(l [][]byte) [][]byte {
			rec := testRecord(4)
			rec.Outcome = OutcomeOK
			l[4] = forge(rec, prev(4))
			return l
		}, 6, KindRemoved, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep := verifyBytes(t, joinLines(tc.edit(clone())))
			if rep.OK {
				t.Fatalf("the tampered log verified: %+v", rep)
			}
			p := rep.Problems[0]
			if p.Line != tc.line || p.Kind != tc.kind || p.Warning {
				t.Errorf("first problem = %+v, want line %d %q", p, tc.line, tc.kind)
			}
			if len(rep.Problems) != tc.problems {
				t.Errorf("%d problems, want %d: %+v", len(rep.Problems), tc.problems, rep.Problems)
			}
		})
	}
}

func TestTornLastLine(t *testing.T) {
	path := writeLog(t, 6)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, path)
	cut := len(b) - len(lines[5])/2
	if err := os.WriteFile(path, b[:cut], 0o600); err != nil {
		t.Fatal(err)
	}
	rep := verifyFile(t, path)
	if rep.OK || rep.Records != 5 || len(rep.Problems) != 1 {
		t.Fatalf("report = %+v", rep)
	}
	if p := rep.Problems[0]; p.Line != 6 || p.Kind != KindTorn || !p.Warning {
		t.Fatalf("problem = %+v, want a torn warning on line 6", p)
	}
	if rep.Head != hashOf(t, lines[4]) {
		t.Errorf("Head = %s, want line 5's hash", rep.Head)
	}

	// After the crash the log goes on: the torn line stays, the chain
	// continues from line 5.
	l, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 6; i < 9; i++ {
		if err := l.Append(context.Background(), testRecord(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rep = verifyFile(t, path)
	if rep.Records != 8 || rep.Lines != 9 || len(rep.Problems) != 1 {
		t.Fatalf("report = %+v", rep)
	}
	if p := rep.Problems[0]; p.Line != 6 || p.Kind != KindTorn || !p.Warning {
		t.Fatalf("problem = %+v, want a torn warning on line 6", p)
	}
	after := readLines(t, path)
	torn := b[len(b)-len(lines[5]) : cut]
	if want := append(append([]byte{}, torn...), '\n'); !bytes.Equal(after[5], want) {
		t.Errorf("line 6 = %q, want the torn bytes %q kept", after[5], want)
	}
}

func TestLastRecordWithoutNewline(t *testing.T) {
	path := writeLog(t, 4)
	b, _ := os.ReadFile(path)
	if err := os.WriteFile(path, b[:len(b)-1], 0o600); err != nil {
		t.Fatal(err)
	}
	rep := verifyFile(t, path)
	if rep.OK || rep.Records != 4 || len(rep.Problems) != 1 || rep.Problems[0].Kind != KindTorn || rep.Problems[0].Line != 4 {
		t.Fatalf("report = %+v", rep)
	}
	l, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(context.Background(), testRecord(4)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if rep := verifyFile(t, path); !rep.OK || rep.Records != 5 {
		t.Fatalf("report = %+v", rep)
	}
}

func TestReopenContinuesChain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	var heads []string
	for round := range 3 {
		l, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if round > 0 && l.Head() != heads[len(heads)-1] {
			t.Fatalf("reopened head %s, want %s", l.Head(), heads[len(heads)-1])
		}
		for i := range 4 {
			if err := l.Append(context.Background(), testRecord(round*4+i)); err != nil {
				t.Fatal(err)
			}
		}
		heads = append(heads, l.Head())
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	rep := verifyFile(t, path)
	if !rep.OK || rep.Records != 12 || rep.Head != heads[2] {
		t.Fatalf("report = %+v", rep)
	}
}

// TestTwoHandlesInterleave appends through two Logs on one file, as two
// processes would: each must notice the other's records and chain onto them.
func TestTwoHandlesInterleave(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	a, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for i := range 10 {
		l := a
		if i%3 == 1 {
			l = b
		}
		if err := l.Append(context.Background(), testRecord(i)); err != nil {
			t.Fatal(err)
		}
	}
	if rep := verifyFile(t, path); !rep.OK || rep.Records != 10 {
		t.Fatalf("report = %+v", rep)
	}
}

func TestOpenRefusesCorruptEnd(t *testing.T) {
	path := writeLog(t, 3)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("not a record\n")
	f.Close()
	if _, err := Open(path, Options{}); err == nil || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open = %v, want ErrCorrupt", err)
	}
}

// TestAppendMillis: duration_ms is written as strconv.AppendFloat writes
// the quotient, for every kind of value.
func TestAppendMillis(t *testing.T) {
	values := []int64{0, 1, 9, 10, 99, 100, 999, 1000, 1001, 1010, 1100, 1500, 12345, 999999, 1000000,
		123456789, 1<<31 - 1, 1 << 40, 999999999999999, 1e15, 1e15 + 1, 1<<53 + 1, math.MaxInt64, math.MinInt64}
	for i := range 2000 {
		values = append(values, int64(i)*7919, int64(i)*1000003+int64(i%1000))
	}
	for _, v := range values {
		for _, us := range []int64{v, -v} {
			want := strconv.AppendFloat(nil, float64(us)/1000, 'f', -1, 64)
			if got := appendMillis(nil, us); string(got) != string(want) {
				t.Errorf("appendMillis(%d) = %s, want %s", us, got, want)
			}
		}
	}
}
