package policy

import (
	"fmt"
	"path"
	"strings"

	"github.com/toolgate/toolgate/tool"
)

// Effect is what a decision lets happen.
type Effect string

const (
	Allow Effect = "allow"
	Ask   Effect = "ask"
	Deny  Effect = "deny"
)

// Mode is the session-wide stance.
type Mode string

const (
	ModeDefault     Mode = "default"      // levels decide: 0-1 run, 2-3 ask
	ModeReadOnly    Mode = "read-only"    // only read-only tools run (plan mode)
	ModeAcceptEdits Mode = "accept-edits" // level 0-1 run without asking, even where rules say ask
	ModeBypass      Mode = "bypass"       // everything runs except what a deny rule or the level cap forbids
)

// Valid reports whether m is a known mode.
func (m Mode) Valid() bool {
	switch m {
	case ModeDefault, ModeReadOnly, ModeAcceptEdits, ModeBypass:
		return true
	}
	return false
}

// Policy is a set of rules over tool names. The zero value is not usable;
// start from Default.
type Policy struct {
	Mode     Mode
	MaxLevel tool.Level // calls to tools above this level are denied
	Deny     []string   // tool-name globs (path.Match syntax), checked first
	Ask      []string   // checked second
	Allow    []string   // checked last
}

// Default is the policy used when none is given: default mode, every level
// reachable, no rules.
func Default() *Policy { return &Policy{Mode: ModeDefault, MaxLevel: tool.LevelHigh} }

// Check reports the first problem in p: an unknown mode, an invalid level,
// or a malformed rule.
func (p *Policy) Check() error {
	if !p.Mode.Valid() {
		return fmt.Errorf("policy: unknown mode %q (want default, read-only, accept-edits or bypass)", p.Mode)
	}
	if !p.MaxLevel.Valid() {
		return fmt.Errorf("policy: max_level %d is not a level (0-3)", p.MaxLevel)
	}
	for _, list := range [][]string{p.Deny, p.Ask, p.Allow} {
		for _, r := range list {
			if err := checkRule(r); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkRule(r string) error {
	if r == "" {
		return fmt.Errorf("policy: empty rule")
	}
	if strings.ContainsAny(r, "()") {
		return fmt.Errorf("policy: rule %q: specifiers in parentheses are not supported yet; name tools by glob, e.g. \"read_*\"", r)
	}
	if _, err := path.Match(r, ""); err != nil {
		return fmt.Errorf("policy: rule %q: %w", r, err)
	}
	return nil
}

// Decision is the outcome of Decide.
type Decision struct {
	Effect  Effect
	Rule    string // the rule that matched ("deny:github__*") or the reason ("level:2")
	Mode    Mode
	Reason  string // a sentence for the model and the audit log
	Confirm bool   // an Ask that needs an explicit second confirmation (level 3)
}

// Decide applies p to a call of the tool def describes.
func (p *Policy) Decide(def tool.Definition, call tool.Call) Decision {
	d := Decision{Mode: p.Mode}
	if def.Level > p.MaxLevel {
		d.Effect, d.Rule = Deny, fmt.Sprintf("max_level:%d", p.MaxLevel)
		d.Reason = fmt.Sprintf("%s is a level-%d tool and this policy allows at most level %d", def.Name, def.Level, p.MaxLevel)
		return d
	}
	if r, ok := match(p.Deny, def.Name); ok {
		d.Effect, d.Rule, d.Reason = Deny, "deny:"+r, fmt.Sprintf("the policy denies %s (rule %q)", def.Name, r)
		return d
	}
	if p.Mode == ModeReadOnly && !(def.Annotations.ReadOnly && def.Level == tool.LevelRead) {
		d.Effect, d.Rule = Deny, "mode:read-only"
		d.Reason = fmt.Sprintf("the session is in read-only mode and %s can change things", def.Name)
		return d
	}
	if p.Mode == ModeBypass {
		d.Effect, d.Rule, d.Reason = Allow, "mode:bypass", "bypass mode allows every call that no deny rule forbids"
		return d
	}
	if r, ok := match(p.Ask, def.Name); ok && !(p.Mode == ModeAcceptEdits && def.Level <= tool.LevelWrite) {
		d.Effect, d.Rule, d.Reason = Ask, "ask:"+r, fmt.Sprintf("the policy asks before %s runs (rule %q)", def.Name, r)
		d.Confirm = def.Level == tool.LevelHigh
		return d
	}
	if r, ok := match(p.Allow, def.Name); ok {
		d.Effect, d.Rule, d.Reason = Allow, "allow:"+r, fmt.Sprintf("the policy allows %s (rule %q)", def.Name, r)
		return d
	}
	lv := levels[def.Level]
	d.Effect, d.Rule, d.Reason = lv.effect, lv.rule, lv.reason
	d.Confirm = def.Level == tool.LevelHigh
	return d
}

// levels is the default treatment of each level (strings built once: Decide
// is on every call's path).
var levels = [...]struct {
	effect       Effect
	rule, reason string
}{
	tool.LevelRead:   {Allow, "level:0", "level-0 tools run without asking"},
	tool.LevelWrite:  {Allow, "level:1", "level-1 tools run without asking"},
	tool.LevelMedium: {Ask, "level:2", "level-2 tools need a human's approval"},
	tool.LevelHigh:   {Ask, "level:3", "level-3 tools need a human's approval and an explicit confirmation"},
}

func match(rules []string, name string) (string, bool) {
	for _, r := range rules {
		if ok, _ := path.Match(r, name); ok {
			return r, true
		}
	}
	return "", false
}
