package policy_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/tool"
	"github.com/toolgate/toolgate/toolsets/fs"
)

const examplePath = "testdata/toolgate.example.yaml"

func TestExampleFileLoadsAndItsExamplesPass(t *testing.T) {
	p, err := policy.Load(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	if p.Mode != policy.ModeDefault || p.DefaultRole != "developer" || p.Roles["admin"].Admin != true || *p.Principals["bob"].MaxLevel != 1 {
		t.Errorf("parsed %+v", p)
	}
	if p.Limits.Tools["github__*"].Burst != 10 || p.Limits.Loop.Window.String() != "1m0s" || p.Limits.Config().Concurrency != 4 {
		t.Errorf("limits %+v", p.Limits)
	}
	if p.Approvals.Timeout.Minutes() != 5 || p.Output.Tools["read_file"] != 262144 || len(p.Secrets.All()) != len(policy.DefaultSecrets())+1 {
		t.Errorf("sections %+v %+v %+v", p.Approvals, p.Output, p.Secrets)
	}
	if a := p.Auth; a == nil || a.Resource != "https://tools.example.com/mcp" || a.JWT.RolesClaim != "realm_access.roles" || len(a.APIKeys) != 1 || a.ToolScopes["execute_*"] != "mcp:exec" {
		t.Errorf("auth %+v", p.Auth)
	}
	abs, _ := filepath.Abs("testdata")
	if len(p.Roots) != 1 || p.Roots[0] != abs {
		t.Errorf("roots are relative to the file: %v", p.Roots)
	}
	if p.Reasons["Bash(rm -rf /)"] == "" || len(p.Deny) != len(policy.DefaultDeny())+5 {
		t.Errorf("deny list %v", p.Deny)
	}
	// The repository root carries the same file.
	root, err := os.ReadFile(filepath.Join("..", "toolgate.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	own, _ := os.ReadFile(examplePath)
	if !bytes.Equal(root, own) {
		t.Error("toolgate.example.yaml at the repository root differs from policy/testdata/toolgate.example.yaml")
	}
	// Decisions a reader of the file would expect.
	for _, tc := range []struct {
		who  string
		c    tool.Call
		want policy.Effect
	}{
		{"", cmd("npm run test -- --watch"), policy.Allow},
		{"", cmd("npm run test && rm -rf /"), policy.Deny},
		{"", cmd("make build"), policy.Allow}, // developer is the default role
		{"bob", cmd("make build"), policy.Deny},
		{"ci-bot", pcall(defRead, map[string]any{"path": "src/a.go"}), policy.Allow},
		{"ci-bot", pcall(defWrite, map[string]any{"path": "src/a.go"}), policy.Deny},
		{"stranger", pcall(defRead, map[string]any{"path": "a"}), policy.Deny},
		{"", cmd("git push origin main"), policy.Ask},
	} {
		c := tc.c
		c.Principal = tc.who
		def := defCmd
		if c.Name != def.Name {
			def = map[string]tool.Definition{"read_file": defRead, "write_file": defWrite}[c.Name]
		}
		if d := p.Decide(def, c); d.Effect != tc.want {
			t.Errorf("%s %s: got %s %q, want %s", tc.who, c.Args, d.Effect, d.Rule, tc.want)
		}
	}
}

func TestSchemaValidatesTheExample(t *testing.T) {
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
	validate := func(y string) error {
		j, err := yaml.YAMLToJSON([]byte(y))
		if err != nil {
			t.Fatal(err)
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
		if err != nil {
			t.Fatal(err)
		}
		return sch.Validate(v)
	}
	data, _ := os.ReadFile(examplePath)
	if err := validate(string(data)); err != nil {
		t.Fatalf("the example does not fit the schema: %v", err)
	}
	for _, bad := range []string{"colour: red\n", "mode: yolo\n", "levels: {4: ask}\n", "deny: [{reason: x}]\n", "limits: {loop: {window: soon}}\n", "deny: ['Bash (x)']\n"} {
		if validate(bad) == nil {
			t.Errorf("the schema accepted %q", bad)
		}
		if _, err := policy.Parse([]byte(bad)); err == nil && bad != "deny: ['Bash (x)']\n" {
			t.Errorf("Parse accepted %q", bad)
		}
	}
}

func TestParseErrorsHavePositions(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"mode: yolo\n", "policy:1:7: unknown mode"},
		{"max_level: 9\n", "policy:1:12: max_level 9 is not a level"},
		{"deny: [a\n", "policy:1:"},
		{"mode: default\ncolour: red\n", "policy:2:1: unknown field \"colour\""},
		{"allow:\n  - read_file\n  - \"Bash(\"\n", "policy:3:5: allow[1]: rule \"Bash(\""},
		{"deny:\n  - rule: Bash(rm:*)\n    resaon: typo\n", "policy:3:5: unknown field \"resaon\""},
		{"deny:\n  - reason: no rule\n", "policy:2:5: a rule object needs \"rule\""},
		{"deny:\n  - 42\n", "policy:2:5: a rule is a string or an object"},
		{"ask:\n  - rule: Bash(git push:*)\n    examples:\n      match: [\"git pull\"]\n", "policy:2:5: ask[0]: rule \"Bash(git push:*)\": example \"git pull\" should match, but does not"},
		{"allow:\n  - rule: Bash(npm test:*)\n    examples: {not_match: [\"npm test && ls\"], match: [\"npm test\"]}\n", ""},
		{"allow:\n  - rule: Bash(npm test:*)\n    examples: {not_match: [\"npm test x\"]}\n", "example \"npm test x\" should not match, but does"},
		{"levels:\n  2: sometimes\n", "policy:2:6: level 2: unknown treatment"},
		{"principals:\n  bob: {role: wizard}\n", "policy:2:15: principal \"bob\" has role \"wizard\""},
		{"limits:\n  tools:\n    x: {per_second: 1}\n", "needs a burst"},
		{"limits:\n  loop: {window: soon}\n", "policy:2:"},
		{"approvals:\n  default_scope: forever\n", "policy:2:18: approvals.default_scope"},
		{"secrets:\n  patterns:\n    - {name: x, regexp: \"(\"}\n", "policy:3:7: secrets.patterns[0]"},
		{"default_role: ghost\n", "policy:1:15: default_role"},
		{"version: 2\n", "policy:1:10: version 2"},
	} {
		_, err := policy.Parse([]byte(tc.in))
		if tc.want == "" {
			if err != nil {
				t.Errorf("Parse(%q): %v", tc.in, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) error = %v, want one containing %q", tc.in, err, tc.want)
		}
		var fe *policy.FileError
		if err != nil && !errors.As(err, &fe) {
			t.Errorf("Parse(%q): %T is not a *FileError", tc.in, err)
		}
	}
	dir := t.TempDir()
	f := filepath.Join(dir, "toolgate.yaml")
	os.WriteFile(f, []byte("mode: default\ndeny:\n  - \"x(\"\n"), 0o644)
	if _, err := policy.Load(f); err == nil || !strings.HasPrefix(err.Error(), f+":3:5: deny[0]") {
		t.Errorf("Load names the file: %v", err)
	}
	if p, err := policy.Parse(nil); err != nil || len(p.Deny) != len(policy.DefaultDeny()) {
		t.Errorf("an empty file is the default policy: %v", err)
	}
	if p, err := policy.Parse([]byte("default_deny: false\nmode: plan\n")); err != nil || len(p.Deny) != 0 || p.Mode != policy.ModeReadOnly {
		t.Errorf("default_deny: false / plan: %+v %v", p, err)
	}
}

// TestDefaultDenyMirrorsTheFileTools checks that the file tool set's
// protected paths are the policy's, every field carried over, and its Ask
// rules the policy's CI definitions.
func TestDefaultDenyMirrorsTheFileTools(t *testing.T) {
	type key struct {
		pattern     string
		read, write bool
		secret, ask bool
		except      string
	}
	var mine, theirs []key
	for _, p := range policy.DefaultDeny() {
		mine = append(mine, key{p.Pattern, p.Read, p.Write, p.Secret, false, strings.Join(p.Except, ",")})
	}
	for _, c := range policy.CIPaths() {
		mine = append(mine, key{"**/" + c.Pattern, false, true, false, true, ""})
	}
	for _, r := range fs.DefaultRules() {
		theirs = append(theirs, key{r.Pattern, r.Access&fs.Read != 0, r.Access&fs.Write != 0, r.Secret, r.Ask, strings.Join(r.Except, ",")})
	}
	if !slices.Equal(mine, theirs) {
		t.Errorf("fs protects\n%+v\nthe policy\n%+v", theirs, mine)
	}
	p := policy.Default()
	for _, path := range []string{".toolgate/spill/x.txt"} {
		if d := p.Decide(defRead, pcall(defRead, map[string]any{"path": path})); d.Effect != policy.Allow {
			t.Errorf("reading %s: %s %q", path, d.Effect, d.Rule)
		}
		if d := p.Decide(defWrite, pcall(defWrite, map[string]any{"path": path})); d.Effect != policy.Deny {
			t.Errorf("writing %s: %s %q", path, d.Effect, d.Rule)
		}
	}
}
