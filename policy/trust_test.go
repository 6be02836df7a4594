package policy_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolgate/toolgate/policy"
)

func TestTrustBlockOfTheExample(t *testing.T) {
	p, err := policy.Load(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(filepath.Join("testdata", ".toolgate", "pins.json"))
	tr := p.Trust
	if tr.Pins != abs || tr.Change() != policy.TrustBlock || tr.ResultMode() != policy.ResultsMark {
		t.Errorf("trust %+v", tr)
	}
	if w := tr.Webhook; w == nil || w.URL != "http://127.0.0.1:8090/check" || w.Timeout != 5*time.Second || w.OnError != policy.OnErrorDeny || w.Headers["X-Toolgate-Hook"] != "example" {
		t.Errorf("webhook %+v", tr.Webhook)
	}
}

// trust.results_tools gives tools their own action by the one glob rule;
// the rest get trust.results.
func TestResultModeFor(t *testing.T) {
	p, err := policy.Parse([]byte("trust:\n  results: block\n  results_tools:\n    http_request: mark\n    \"*\": off\n    \"read_*\": mark\n    read_file: block\n"))
	if err != nil {
		t.Fatal(err)
	}
	mode, err := p.Trust.ResultModeFor()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]policy.ResultAction{"http_request": "mark", "read_file": "block", "read_text": "mark", "execute_command": "off"} {
		if got := mode(name); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
	none, _ := policy.Trust{Results: "block"}.ResultModeFor()
	if none("x") != policy.ResultsBlock {
		t.Error("without a map, every tool gets trust.results")
	}
}

func TestTrustDefaults(t *testing.T) {
	var tr policy.Trust
	if tr.Change() != policy.TrustBlock || tr.ResultMode() != policy.ResultsMark {
		t.Errorf("defaults: on_change %s, results %s", tr.Change(), tr.ResultMode())
	}
	for verdict, want := range map[string]policy.TrustAction{"malicious": policy.TrustBlock, "suspicious": policy.TrustAsk, "clean": "", "": "", "MALICIOUS": ""} {
		if got := tr.Scan.For(verdict); got != want {
			t.Errorf("scan default for %q: %q, want %q", verdict, got, want)
		}
	}
	if p := policy.Default(); p.Trust.Pins != "" {
		t.Errorf("a policy without a file has pins %q", p.Trust.Pins)
	}
}

func TestTrustBlockParses(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		yaml                  string
		pins                  string // relative to dir, or absolute when it starts with /
		change                policy.TrustAction
		malicious, suspicious policy.TrustAction
		results               policy.ResultAction
	}{
		{"", ".toolgate/pins.json", "block", "block", "ask", "mark"},
		{"trust: {}", ".toolgate/pins.json", "block", "block", "ask", "mark"},
		{"trust: {pins: p.json}", "p.json", "block", "block", "ask", "mark"},
		{"trust: {pins: ../up/p.json}", "../up/p.json", "block", "block", "ask", "mark"},
		{"trust: {pins: /abs/pins.json}", "/abs/pins.json", "block", "block", "ask", "mark"},
		{"trust: {on_change: ask}", ".toolgate/pins.json", "ask", "block", "ask", "mark"},
		{"trust: {on_change: warn, results: off}", ".toolgate/pins.json", "warn", "block", "ask", "off"},
		{"trust: {scan: warn}", ".toolgate/pins.json", "block", "warn", "warn", "mark"},
		{"trust: {scan: block}", ".toolgate/pins.json", "block", "block", "block", "mark"},
		{"trust: {scan: {suspicious: warn}}", ".toolgate/pins.json", "block", "block", "warn", "mark"},
		{"trust: {scan: {malicious: ask}}", ".toolgate/pins.json", "block", "ask", "ask", "mark"},
		{"trust:\n  scan:\n    malicious: block\n    suspicious: block\n  results: block\n", ".toolgate/pins.json", "block", "block", "block", "block"},
		{"trust: {webhook: {url: 'https://hook.example/x', on_error: allow}}", ".toolgate/pins.json", "block", "block", "ask", "mark"},
	} {
		file := filepath.Join(dir, "toolgate.yaml")
		if err := os.WriteFile(file, []byte(tc.yaml+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		p, err := policy.Load(file)
		if err != nil {
			t.Errorf("%q: %v", tc.yaml, err)
			continue
		}
		want := tc.pins
		if !filepath.IsAbs(want) {
			want = filepath.Join(dir, want)
		}
		tr := p.Trust
		if tr.Pins != want || tr.Change() != tc.change || tr.Scan.For("malicious") != tc.malicious || tr.Scan.For("suspicious") != tc.suspicious || tr.ResultMode() != tc.results {
			t.Errorf("%q: got pins %s, on_change %s, scan %s/%s, results %s", tc.yaml, tr.Pins, tr.Change(), tr.Scan.For("malicious"), tr.Scan.For("suspicious"), tr.ResultMode())
		}
	}
	// Parse (no file) leaves pins as written: relative to the current folder.
	if p, err := policy.Parse([]byte("trust: {pins: p.json}")); err != nil || p.Trust.Pins != "p.json" {
		t.Errorf("Parse: %v %q", err, p.Trust.Pins)
	}
}

func TestTrustBlockErrorsSayWhatToWrite(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		line int
		want []string
	}{
		{"trust:\n  on_change: deny\n", 2, []string{"on_change", `"deny"`, "block", "ask", "warn"}},
		{"trust:\n  on_change: Block\n", 2, []string{"on_change", "block"}},
		{"trust:\n  scan: quarantine\n", 2, []string{"trust.scan", "block", "malicious: block, suspicious: ask"}},
		{"trust:\n  scan: {malicious: allow}\n", 2, []string{"malicious", "block"}},
		{"trust:\n  scan: {suspicious: ignore}\n", 2, []string{"suspicious", "warn"}},
		{"trust:\n  scan: {benign: warn}\n", 2, []string{"benign"}},
		{"trust:\n  scan: [block]\n", 2, nil},
		{"trust:\n  results: wrap\n", 2, []string{"results", "mark", "block", "off"}},
		{"trust:\n  results_tools:\n    read_file: wrap\n", 3, []string{"results_tools", "read_file", "mark", "block", "off"}},
		{"trust:\n  results_tools:\n    \"read_*\": off\n    \"*_file\": block\n", 0, []string{"results_tools", "read_*", "*_file", "equally specific"}},
		{"trust:\n  pinz: x\n", 2, []string{"pinz"}},
		{"trust:\n  webhook: {timeout: 1s}\n", 2, []string{"webhook.url is required"}},
		{"trust:\n  webhook:\n    url: ftp://h/x\n", 3, []string{"http://", "https://"}},
		{"trust:\n  webhook:\n    url: http:///x\n", 3, []string{"host"}},
		{"trust:\n  webhook:\n    url: http://h/x\n    timeout: -1s\n", 4, []string{"negative"}},
		{"trust:\n  webhook:\n    url: http://h/x\n    timeout: soon\n", 0, []string{"soon"}},
		{"trust:\n  webhook:\n    url: http://h/x\n    on_error: ignore\n", 4, []string{"on_error", "deny", "allow"}},
		{"trust:\n  webhook:\n    url: http://h/x\n    headers: [a]\n", 0, nil},
	} {
		_, err := policy.Parse([]byte(tc.yaml))
		var fe *policy.FileError
		if !errors.As(err, &fe) {
			t.Errorf("%q: got %v, want a FileError", tc.yaml, err)
			continue
		}
		if tc.line > 0 && fe.Line != tc.line {
			t.Errorf("%q: error at line %d, want %d: %v", tc.yaml, fe.Line, tc.line, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error %q does not say %q", tc.yaml, err, w)
			}
		}
	}
}

func TestSchemaKnowsTheTrustBlock(t *testing.T) {
	c := jsonschema.NewCompiler()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(policy.Schema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("toolgate.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("toolgate.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	for y, ok := range map[string]bool{
		"trust: {on_change: ask, scan: warn, results: off}":                   true,
		"trust: {scan: {malicious: block, suspicious: warn}}":                 true,
		"trust: {webhook: {url: 'http://h/x', timeout: 2s, headers: {A: b}}}": true,
		"trust: {on_change: deny}":                                            false,
		"trust: {scan: {malicious: allow}}":                                   false,
		"trust: {scan: {benign: warn}}":                                       false,
		"trust: {results: wrap}":                                              false,
		"trust: {webhook: {timeout: 2s}}":                                     false,
		"trust: {webhook: {url: 'ftp://h/x'}}":                                false,
		"trust: {webhook: {url: 'http://h/x', timeout: soon}}":                false,
		"trust: {webhook: {url: 'http://h/x', on_error: maybe}}":              false,
		"trust: {pinz: x}":                                                    false,
	} {
		j, err := yaml.YAMLToJSON([]byte(y))
		if err != nil {
			t.Fatal(err)
		}
		v, _ := jsonschema.UnmarshalJSON(bytes.NewReader(j))
		if err := sch.Validate(v); (err == nil) != ok {
			t.Errorf("schema on %q: %v, want valid=%v", y, err, ok)
		}
		if _, err := policy.Parse([]byte(y)); (err == nil) != ok {
			t.Errorf("Parse on %q: %v, want valid=%v", y, err, ok)
		}
	}
}
