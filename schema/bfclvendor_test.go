package schema

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestBFCLVendorConstraints compiles every BFCL v4 function for every
// provider and checks the result against the vendor's constraints.
func TestBFCLVendorConstraints(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "bfcl-v4", "BFCL_v4_*.json"))
	if len(files) == 0 {
		t.Fatal("no BFCL data in testdata/bfcl-v4")
	}
	n := 0
	seen := map[string]bool{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var e struct {
				ID       string `json:"id"`
				Function []struct {
					Name       string          `json:"name"`
					Parameters json.RawMessage `json:"parameters"`
				} `json:"function"`
			}
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Fatal(err)
			}
			for _, fn := range e.Function {
				n++
				if seen[string(fn.Parameters)] {
					continue
				}
				seen[string(fn.Parameters)] = true
				if !ValidToolName(ToolName(fn.Name)) {
					t.Errorf("%s: ToolName(%q) = %q is not valid", e.ID, fn.Name, ToolName(fn.Name))
				}
				for _, p := range Providers() {
					c, err := CompileFor(p, fn.Parameters)
					if err != nil {
						t.Errorf("%s %s %s: %v", e.ID, fn.Name, p, err)
						continue
					}
					if err := checkProvider(p, c.Schema); err != nil {
						t.Errorf("%s %s %s: %v\n%s", e.ID, fn.Name, p, err, c.Schema)
					}
				}
			}
		}
		fh.Close()
	}
	t.Logf("%d functions (%d distinct) compiled for %d providers", n, len(seen), len(Providers()))
}
