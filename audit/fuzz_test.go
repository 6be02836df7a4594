package audit

import (
	"bytes"
	"encoding/json"
	"testing"
)

// seedLog is a small valid log, built once per fuzz target.
func seedLog(t testing.TB) []byte {
	var b []byte
	prev := GenesisHash
	for i := range 6 {
		line := forge(testRecord(i), prev)
		b = append(b, line...)
		prev = hashOf(t, line)
	}
	return b
}

// FuzzVerify feeds Verify arbitrary bytes (it must never panic and must
// account for every line), then mutates a valid log with the same input:
// a mutated log may verify only if it is unchanged, or a prefix of whole
// lines (which the head, pinned elsewhere, gives away).
func FuzzVerify(f *testing.F) {
	valid := seedLog(f)
	f.Add(valid, uint8(0), uint16(0))
	f.Add([]byte("{\"time\":\"x"), uint8(1), uint16(100))
	f.Add([]byte("\n\n"), uint8(2), uint16(300))
	f.Add([]byte{'A'}, uint8(3), uint16(7))
	f.Add(valid[:len(valid)/2], uint8(4), uint16(2))
	orig, err := Verify(bytes.NewReader(valid))
	if err != nil || !orig.OK {
		f.Fatalf("seed log: %+v %v", orig, err)
	}
	lines := bytes.SplitAfter(valid, []byte{'\n'})
	lines = lines[:len(lines)-1]
	f.Fuzz(func(t *testing.T, data []byte, op uint8, pos uint16) {
		rep, err := Verify(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if rep.Records > rep.Lines || (rep.OK && len(rep.Problems) > 0) {
			t.Fatalf("inconsistent report %+v", rep)
		}

		p := int(pos) % (len(valid) + 1)
		var m []byte
		switch op % 6 {
		case 0: // overwrite bytes
			m = append([]byte{}, valid...)
			copy(m[p:], data)
		case 1: // insert bytes
			m = append(append(append([]byte{}, valid[:p]...), data...), valid[p:]...)
		case 2: // delete bytes
			end := min(len(valid), p+len(data)+1)
			m = append(append([]byte{}, valid[:p]...), valid[end:]...)
		case 3: // swap two lines
			i, j := p%len(lines), int(op/6)%len(lines)
			c := append([][]byte{}, lines...)
			c[i], c[j] = c[j], c[i]
			m = bytes.Join(c, nil)
		case 4: // duplicate a line elsewhere
			i, j := p%len(lines), int(op/6)%(len(lines)+1)
			c := append([][]byte{}, lines[:j]...)
			c = append(c, lines[i])
			c = append(c, lines[j:]...)
			m = bytes.Join(c, nil)
		case 5: // truncate
			m = valid[:p]
		}
		got, err := Verify(bytes.NewReader(m))
		if err != nil {
			t.Fatal(err)
		}
		if got.OK && got.Head == orig.Head && !bytes.Equal(m, valid) {
			t.Fatalf("a changed log verified with the same head:\n%q", m)
		}
		if got.OK && !bytes.HasPrefix(valid, m) {
			t.Fatalf("a changed log verified:\n%q", m)
		}
	})
}

// FuzzArguments checks that logged arguments are always JSON, bounded, and
// unchanged by a second pass.
func FuzzArguments(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,"x",{"b":null}]}`, `{"a":"\u00e9\n"}`, `not json`, "\xff", `"s"`, ` [ 1 , 2 ] `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		out := appendArguments(nil, raw)
		if !json.Valid(out) {
			t.Fatalf("arguments %q logged as %q: not JSON", raw, out)
		}
		if len(out) > MaxArgumentsLen {
			t.Fatalf("arguments logged as %d bytes", len(out))
		}
		if again := appendArguments(nil, out); !bytes.Equal(again, out) {
			t.Fatalf("second pass changed %q to %q", out, again)
		}
		if bytes.ContainsAny(out, "\n\r") {
			t.Fatalf("logged arguments hold a line break: %q", out)
		}
	})
}
