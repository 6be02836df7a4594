package policy

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/toolgate/toolgate/tool"
)

// TestApplicableRulesCache: the rules a tool's calls are checked against
// are cached per tool and rule list; the decisions are those of walking
// every rule, for tools of every kind, whether the cache is cold or warm,
// when the same tool's annotations change between calls, and when the
// lists are replaced.
func TestApplicableRulesCache(t *testing.T) {
	schema := func(props string) json.RawMessage {
		return json.RawMessage(`{"type":"object","properties":{` + props + `}}`)
	}
	defs := []tool.Definition{
		{Name: "noop", InputSchema: schema(`"query":{"type":"string"}`)},
		{Name: "read_file", InputSchema: schema(`"path":{"type":"string"}`), Annotations: tool.Annotations{ReadOnly: true}},
		{Name: "read_file", InputSchema: schema(`"path":{"type":"string"}`)}, // the same tool, now writing
		{Name: "write_file", InputSchema: schema(`"path":{"type":"string"},"content":{"type":"string"}`), Level: tool.LevelWrite},
		{Name: "run_command", InputSchema: schema(`"command":{"type":"string"}`), Level: tool.LevelMedium},
		{Name: "fetch", InputSchema: schema(`"url":{"type":"string"}`), Annotations: tool.Annotations{ReadOnly: true, OpenWorld: true}},
		{Name: "github__push", InputSchema: schema(`"branch":{"type":"string"}`), Level: tool.LevelHigh},
	}
	args := []string{
		`{"query":"a"}`, `{"path":"a.txt"}`, `{"path":".git/config"}`, `{"path":".env"}`, `{"path":"src/.git/hooks/pre-commit"}`,
		`{"path":"a.txt","content":"x"}`, `{"command":"ls"}`, `{"command":"cat .env"}`, `{"command":"rm -rf /"}`,
		`{"url":"https://example.com/"}`, `{"url":"https://evil.test/"}`, `{"branch":"main"}`,
	}
	lists := []struct{ deny, ask, allow []string }{
		{deny: Default().Deny},
		{deny: []string{"Bash(rm *)", "WebFetch(domain:evil.test)", "github__*"}, ask: []string{"Edit(**)", "Bash"}, allow: []string{"Read(**)", "WebFetch"}},
		{deny: []string{"Edit(**/.git/**)"}, ask: []string{"read_file"}, allow: []string{"*"}},
	}
	for li, l := range lists {
		fresh := func() *Policy {
			p := Default()
			p.Deny, p.Ask, p.Allow = l.deny, l.ask, l.allow
			return p
		}
		warm := fresh()
		for round := range 3 { // cold, warm, warm
			for _, def := range defs {
				for _, a := range args {
					call := tool.Call{Name: def.Name, Args: json.RawMessage(a)}
					got := warm.Decide(def, call)
					want := walkAll(fresh(), def, call)
					if got.Effect != want.Effect || got.Rule != want.Rule {
						t.Errorf("list %d round %d: %s(read-only %v) %s: %s %s, every rule walked: %s %s",
							li, round, def.Name, def.Annotations.ReadOnly, a, got.Effect, got.Rule, want.Effect, want.Rule)
					}
				}
			}
		}
		// Replacing a list is seen at once.
		warm.Deny = append([]string{"noop"}, l.deny...)
		if d := warm.Decide(defs[0], tool.Call{Name: "noop", Args: json.RawMessage(`{}`)}); d.Effect != Deny {
			t.Errorf("list %d: a new deny rule was not seen: %+v", li, d)
		}
	}
}

// walkAll decides as DecideParsed does, with the cache emptied first.
func walkAll(p *Policy, def tool.Definition, call tool.Call) Decision {
	info := p.info(def)
	info.applies.m.Clear()
	d := p.Decide(def, call)
	info.applies.m.Clear()
	return d
}

func TestApplicableRulesBounded(t *testing.T) {
	p := Default()
	def := tool.Definition{Name: "noop", InputSchema: json.RawMessage(`{"type":"object"}`)}
	for i := range 3 * maxCached {
		p.Deny = []string{fmt.Sprintf("tool_%d", i)}
		p.Decide(def, tool.Call{Name: "noop"})
	}
	n := 0
	p.info(def).applies.m.Range(func(any, any) bool { n++; return true })
	if n > maxCached {
		t.Errorf("%d lists cached for one tool, want at most %d", n, maxCached)
	}
}
