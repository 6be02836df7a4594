package trust_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/trust"
)

// FuzzCanonical: the canonical form of a JSON document is a fixed point,
// valid JSON, and the same for the document re-encoded.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[1,2,{"d":"x","c":null}]}`, `"\u00e9\ud83d\ude00"`, `1.0e10`, `{"a":"<>&"}`, `[]`, `{"a":1,"a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		c, err := trust.Canonical(doc)
		if err != nil {
			return
		}
		if !json.Valid(c) {
			t.Fatalf("canonical form is not JSON: %q", c)
		}
		c2, err := trust.Canonical(c)
		if err != nil || !bytes.Equal(c, c2) {
			t.Fatalf("not a fixed point: %q → %q (%v)", c, c2, err)
		}
		var v any
		json.Unmarshal(doc, &v)
		re, _ := json.MarshalIndent(v, "", "   ")
		if c3, err := trust.Canonical(re); err == nil && !bytes.Equal(c3, c) && bytes.Equal(re, c) {
			t.Fatalf("re-encoding changed the canonical form")
		}
	})
}

// FuzzPinFile: any bytes in the pin file are read or refused, never a
// panic, and a file that loads can be reviewed and approved.
func FuzzPinFile(f *testing.F) {
	f.Add([]byte(`{"version":1,"upstreams":{"up":{"identity":{"command":["srv"]},"first_seen":"2026-01-02T03:04:05Z","approved_by":"x","approved_at":"2026-01-02T03:04:05Z","tools":{"add":{"hash":"00","first_seen":"2026-01-02T03:04:05Z","pending":{"hash":"11","definition":{"name":"add"},"seen_at":"2026-01-02T03:04:05Z","why":"w","verdict":"clean"}}}}}}`))
	f.Add([]byte(`{"version":1,"upstreams":{}}`))
	f.Add([]byte(`{"version":1,"upstreams":{"up":{"tools":{}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "pins.json")
		os.WriteFile(path, data, 0o600)
		p := trust.OpenPins(path)
		if _, err := p.Load(); err != nil {
			return
		}
		if _, _, err := p.Review([]trust.Listing{{Upstream: "up", Identity: id1, Tools: []trust.ToolDef{clean1}}}, trust.Settings{}, t0); err != nil {
			t.Fatalf("a file that loads cannot be reviewed: %v", err)
		}
		p.Approve("up/*", "x", t0)
		if _, err := p.Load(); err != nil {
			t.Fatalf("the file written does not load: %v", err)
		}
	})
}
