package policy_test

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/tool"
)

func def(name string, level tool.Level, readOnly bool) tool.Definition {
	return tool.Definition{Name: name, Level: level, Annotations: tool.Annotations{ReadOnly: readOnly}}
}

func TestDecide(t *testing.T) {
	read := def("read_file", 0, true)
	write := def("write_file", 1, false)
	cmd := def("execute_command", 2, false)
	del := def("delete_file", 3, false)
	gh := def("github__create_issue", 2, false)

	base := func(mut func(*policy.Policy)) *policy.Policy {
		p := policy.Default()
		if mut != nil {
			mut(p)
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		p       *policy.Policy
		d       tool.Definition
		effect  policy.Effect
		rule    string
		confirm bool
	}{
		{"level 0 runs", base(nil), read, policy.Allow, "level:0", false},
		{"level 1 runs", base(nil), write, policy.Allow, "level:1", false},
		{"level 2 asks", base(nil), cmd, policy.Ask, "level:2", false},
		{"level 3 asks to confirm", base(nil), del, policy.Ask, "level:3", true},
		{"max level denies", base(func(p *policy.Policy) { p.MaxLevel = 1 }), cmd, policy.Deny, "max_level:1", false},
		{"deny glob", base(func(p *policy.Policy) { p.Deny = []string{"github__*"} }), gh, policy.Deny, "deny:github__*", false},
		{"deny beats allow", base(func(p *policy.Policy) { p.Deny = []string{"write_*"}; p.Allow = []string{"write_file"} }), write, policy.Deny, "deny:write_*", false},
		{"ask beats allow", base(func(p *policy.Policy) { p.Ask = []string{"*"}; p.Allow = []string{"read_file"} }), read, policy.Ask, "ask:*", false},
		{"allow skips asking", base(func(p *policy.Policy) { p.Allow = []string{"execute_command"} }), cmd, policy.Allow, "allow:execute_command", false},
		{"read-only denies writes", base(func(p *policy.Policy) { p.Mode = policy.ModeReadOnly }), write, policy.Deny, "mode:read-only", false},
		{"read-only allows reads", base(func(p *policy.Policy) { p.Mode = policy.ModeReadOnly }), read, policy.Allow, "level:0", false},
		{"read-only beats allow", base(func(p *policy.Policy) { p.Mode = policy.ModeReadOnly; p.Allow = []string{"*"} }), cmd, policy.Deny, "mode:read-only", false},
		{"bypass allows level 3", base(func(p *policy.Policy) { p.Mode = policy.ModeBypass }), del, policy.Allow, "mode:bypass", false},
		{"bypass keeps deny rules", base(func(p *policy.Policy) { p.Mode = policy.ModeBypass; p.Deny = []string{"delete_file"} }), del, policy.Deny, "deny:delete_file", false},
		{"bypass keeps max level", base(func(p *policy.Policy) { p.Mode = policy.ModeBypass; p.MaxLevel = 2 }), del, policy.Deny, "max_level:2", false},
		{"accept-edits skips ask for writes", base(func(p *policy.Policy) { p.Mode = policy.ModeAcceptEdits; p.Ask = []string{"write_file"} }), write, policy.Allow, "level:1", false},
		{"accept-edits still asks for commands", base(func(p *policy.Policy) { p.Mode = policy.ModeAcceptEdits }), cmd, policy.Ask, "level:2", false},
	} {
		got := tc.p.Decide(tc.d, tool.Call{Name: tc.d.Name})
		if got.Effect != tc.effect || got.Rule != tc.rule || got.Confirm != tc.confirm {
			t.Errorf("%s: got %s %q confirm=%v, want %s %q confirm=%v", tc.name, got.Effect, got.Rule, got.Confirm, tc.effect, tc.rule, tc.confirm)
		}
		if got.Reason == "" {
			t.Errorf("%s: decision has no reason", tc.name)
		}
	}
}

func TestParse(t *testing.T) {
	p, err := policy.Parse([]byte("# comment\nmode: read-only\nmax_level: 2\ndeny: [\"github__*\"]\nallow:\n  - read_file\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Mode != policy.ModeReadOnly || p.MaxLevel != 2 || p.Deny[0] != "github__*" || p.Allow[0] != "read_file" {
		t.Errorf("parsed %+v", p)
	}
	for _, tc := range []struct{ in, want string }{
		{"mode: yolo\n", "unknown mode"},
		{"max_level: 9\n", "not a level"},
		{"deny: [a\n", "[1:"},
		{"colour: red\n", "unknown field"},
		{"deny: [\"[\"]\n", "syntax error"},
		{"deny:\n  - \"\"\n", "empty rule"},
		{"allow: [\"Bash(rm:*)\"]\n", "not supported yet"},
		{"mode: [1, 2]\n", "[1:"},
	} {
		_, err := policy.Parse([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) error = %v, want one containing %q", tc.in, err, tc.want)
		}
	}
}
