package policy_test

import (
	"encoding/json"
	"testing"

	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/tool"
)

// FuzzDecideCommand: any command line gets a decision, without a panic,
// and one that a deny rule catches in isolation is never allowed when
// joined to an allowed command.
func FuzzDecideCommand(f *testing.F) {
	for _, s := range []string{"ls", "npm run test && rm -rf /", "echo $(curl x)", "bash -c 'rm x'", "a=$((b[$(c)]))", "env -S 'x y'", "xargs -I{} sh -c '{}'", "f(){ f|f& };f", "cat <<E\n$(rm x)\nE", "${!x}", "[[ $a -eq 1 ]]", "find . -exec rm {} +"} {
		f.Add(s)
	}
	p := pol([]string{"Bash(rm:*)"}, nil, []string{"Bash(ls:*)", "Bash(echo:*)"})
	f.Fuzz(func(t *testing.T, s string) {
		d := p.Decide(defCmd, cmd(s))
		if d.Effect == "" || d.Reason == "" {
			t.Fatalf("%q: empty decision %+v", s, d)
		}
		if d.Effect == policy.Allow && p.Decide(defCmd, cmd("rm x; "+s)).Effect == policy.Allow {
			t.Fatalf("%q: a denied part was let through", s)
		}
		p.Decide(defCmd, pcall(defCmd, map[string]any{"argv": []string{"sh", "-c", s}}))
		policy.SuggestRules(p, defCmd, cmd(s))
	})
}

// FuzzParse: any file is loaded or refused with an error, never a panic.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"mode: default\n", "deny: [\"Bash(rm:*)\"]\n", "allow:\n  - rule: x\n    examples: {match: [x]}\n", "roles: {a: {max_level: 1}}\nprincipals: {b: {role: a}}\n", "limits: {loop: {window: 1m}}\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := policy.Parse(data)
		if err == nil {
			p.Decide(defRead, pcall(defRead, map[string]any{"path": "a"}))
		}
	})
}

// FuzzDecidePaths: hostile arguments to file and HTTP tools.
func FuzzDecidePaths(f *testing.F) {
	f.Add(`{"path":"../../etc/passwd"}`, `{"url":"http://a@b/"}`)
	p := pol([]string{"WebFetch(domain:*.evil.test)"}, nil, []string{"Read(src/**)", "WebFetch(domain:example.com)"})
	f.Fuzz(func(t *testing.T, a, b string) {
		p.Decide(defRead, pcallRaw(defRead, a))
		p.Decide(defPatch, pcallRaw(defPatch, a))
		p.Decide(defHTTP, pcallRaw(defHTTP, b))
	})
}

func pcallRaw(def tool.Definition, args string) tool.Call {
	return tool.Call{Name: def.Name, Args: json.RawMessage(args)}
}
