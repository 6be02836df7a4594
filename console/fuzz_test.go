package console

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzArgs: whatever a caller sends as arguments, the queue renders it
// without panicking, one entry per member of an object, and folds exactly
// the long or multi-line values, with a summary that is valid text.
func FuzzArgs(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"path":"x","content":"` + strings.Repeat("y", 300) + `"}`, `[1,2]`, `"str"`, `{"a":{"b":[1,{"c":"d\ne"}]}}`, `{"a":`, "\xff", `{"k":"\u00e9\u4e2d"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		out := args(raw)
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) == nil && obj != nil && len(out) != len(obj) {
			t.Fatalf("%d entries for %d members", len(out), len(obj))
		}
		for _, a := range out {
			folded := len(a.Value) > foldBytes || strings.Contains(a.Value, "\n")
			if folded != (a.Summary != "") {
				t.Fatalf("value %q folded %v, summary %q", a.Value, folded, a.Summary)
			}
			if utf8.ValidString(a.Value) && !utf8.ValidString(a.Summary) {
				t.Fatalf("summary %q cuts a character", a.Summary)
			}
		}
	})
}
