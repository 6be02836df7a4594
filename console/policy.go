package console

import (
	"encoding/json"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/toolgate/toolgate/policy"
)

// ruleRow is a rule on the policy page.
type ruleRow struct {
	Effect, Rule, Source string
	Hour, Day            int // decisions it made
}

// builtinSource is the source of the protected paths every policy denies
// unless default_deny is false.
const builtinSource = "built-in protected paths (default_deny)"

// builtinCI is the source of the CI definitions every policy asks about
// (Policy.Guarded) unless default_deny is false.
const builtinCI = "built-in CI definitions, asked unless an allow rule names the path (default_deny)"

// whatIf is the what-if box: its form and the policy's answer.
type whatIf struct {
	Tool, Args string
	Decision   *policy.Decision
	Problem    string
}

func (c *Console) policyPage(w http.ResponseWriter, r *http.Request, u User) {
	p := c.o.Policy
	if p == nil {
		c.problem(w, r, http.StatusNotFound, &u, "No policy is loaded.", "")
		return
	}
	data := map[string]any{"Mode": p.Mode, "MaxLevel": p.MaxLevel, "Source": p.Source}
	hour, day := c.ruleCounts()
	defaults := map[string]bool{}
	for _, d := range policy.DefaultDeny() {
		defaults[d.Rule] = true
	}
	file := "the policy file " + filepath.Base(p.Source)
	if p.Source == "" {
		file = "the built-in default policy"
	}
	var rows []ruleRow
	add := func(effect string, rules []string, source func(string) string) {
		for _, rule := range rules {
			key := effect + ":" + rule
			rows = append(rows, ruleRow{Effect: effect, Rule: rule, Source: source(rule), Hour: hour[key], Day: day[key]})
		}
	}
	own := func(rule string) string {
		if defaults[rule] {
			return builtinSource
		}
		return file
	}
	add("deny", p.Deny, own)
	add("ask", p.Ask, own)
	add("allow", p.Allow, own)
	add("ask", p.Guarded, func(string) string { return builtinCI })
	for _, name := range slices.Sorted(maps.Keys(p.Roles)) {
		role := p.Roles[name]
		from := func(string) string { return "role " + name + " in " + file }
		add("deny", role.Deny, from)
		add("ask", role.Ask, from)
		add("allow", role.Allow, from)
	}
	var mine, builtin []ruleRow
	for _, row := range rows {
		if row.Source == builtinSource || row.Source == builtinCI {
			builtin = append(builtin, row)
		} else {
			mine = append(mine, row)
		}
	}
	data["Rules"], data["Builtin"] = mine, builtin
	// what decided without a rule: levels, modes, the tools' own questions
	var other []ruleRow
	listed := map[string]bool{}
	for _, row := range rows {
		listed[row.Effect+":"+row.Rule] = true
	}
	for _, k := range slices.Sorted(maps.Keys(day)) {
		if !listed[k] {
			other = append(other, ruleRow{Rule: k, Hour: hour[k], Day: day[k]})
		}
	}
	data["Other"] = other
	wi := whatIf{Tool: r.PostFormValue("tool"), Args: r.PostFormValue("arguments")}
	if r.Method == http.MethodPost {
		wi.Decision, wi.Problem = c.decideWhatIf(u, wi.Tool, wi.Args)
	}
	if wi.Args == "" {
		wi.Args = "{}"
	}
	data["WhatIf"] = wi
	var names []string
	for _, d := range c.tools(u) {
		names = append(names, d.Name)
	}
	data["ToolNames"] = names
	c.page(w, r, http.StatusOK, "policy", &u, data)
}

// decideWhatIf runs the policy, and only the policy, on a call u would
// make: nothing runs and nothing is recorded.
func (c *Console) decideWhatIf(u User, name, args string) (*policy.Decision, string) {
	name = strings.TrimSpace(name)
	if name == "" {
		return nil, "Name a tool."
	}
	args = strings.TrimSpace(args)
	if args == "" {
		args = "{}"
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(args), &obj); err != nil || obj == nil {
		return nil, "The arguments must be one JSON object, such as {\"path\": \"README.md\"}."
	}
	for _, d := range c.tools(u) {
		if d.Name == name {
			dec := c.o.Policy.Decide(d, u.call(name, []byte(args)))
			return &dec, ""
		}
	}
	return nil, "There is no tool " + name + " among the tools you are shown."
}

// ruleCounts counts the decisions of the last hour and day by rule, as
// "effect:rule" (an allow by several rules counts for each).
func (c *Console) ruleCounts() (hour, day map[string]int) {
	hour, day = map[string]int{}, map[string]int{}
	now := time.Now()
	for _, rec := range c.auditSince(now.Add(-24 * time.Hour)) {
		keys := []string{rec.Rule}
		if rest, ok := strings.CutPrefix(rec.Rule, "allow:"); ok {
			keys = nil
			for _, r := range strings.Split(rest, " + ") {
				keys = append(keys, "allow:"+r)
			}
		}
		for _, k := range keys {
			if k == "" {
				continue
			}
			day[k]++
			if rec.Time.After(now.Add(-time.Hour)) {
				hour[k]++
			}
		}
	}
	return hour, day
}
