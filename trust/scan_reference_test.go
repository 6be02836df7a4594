package trust_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/toolgate/toolgate/trust"
)

// TestReferenceServersAreClean: the tools of the MCP reference servers
// (everything and filesystem, as they list them; testdata/reference-servers.json)
// are benign, so the scan must find them clean and report nothing about
// them: the gateway pins them on first use with no finding for a person
// to read (issue 17: "a clean upstream passes with no quarantine and no
// finding").
func TestReferenceServersAreClean(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "reference-servers.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Servers map[string][]trust.ToolDef `json:"servers"`
	}
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatal(err)
	}
	var servers []string
	for s := range ref.Servers {
		servers = append(servers, s)
	}
	slices.Sort(servers)
	n := 0
	for _, server := range servers {
		defs := ref.Servers[server]
		for _, r := range trust.ScanSet(server, defs, servers) {
			n++
			if r.Verdict != trust.Clean {
				t.Errorf("%s/%s: %s", server, r.Tool, r.Verdict)
			}
			for _, f := range r.Findings {
				t.Errorf("%s/%s: finding on a reference tool: %s at %s (weight %d): %q — %s", server, r.Tool, f.Kind, f.Field, f.Weight, f.Evidence, f.Why)
			}
		}
	}
	if n < 25 {
		t.Errorf("only %d reference tools scanned", n)
	}
}
