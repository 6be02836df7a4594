package trust_test

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/trust"
)

// TestBoxInThePin: the box's grants are part of the pinned identity:
// widening them quarantines every tool of the upstream until approved;
// narrowing does not, and the pin takes the narrower box (granting the
// old again is then a widening).
func TestBoxInThePin(t *testing.T) {
	base := trust.Box{Read: []string{"/srv/docs"}, Write: []string{"/srv/work"}, Network: []string{"api.github.com", "*.githubusercontent.com"},
		Memory: 512 << 20, Processes: 256}
	with := func(f func(b *trust.Box)) trust.Identity {
		b := base
		b.Read, b.Write, b.Network = append([]string(nil), b.Read...), append([]string(nil), b.Write...), append([]string(nil), b.Network...)
		f(&b)
		id := id1
		id.Box = &b
		return id
	}
	pinned := with(func(*trust.Box) {})
	for _, tc := range []struct {
		name  string
		id    trust.Identity
		wider string // "" for narrower
	}{
		{"a new write path", with(func(b *trust.Box) { b.Write = append(b.Write, "/srv/other") }), "write /srv/other"},
		{"a read path outside", with(func(b *trust.Box) { b.Read = append(b.Read, "/srv/secret") }), "read /srv/secret"},
		{"a new domain", with(func(b *trust.Box) { b.Network = append(b.Network, "evil.example") }), "network evil.example"},
		{"a private entry", with(func(b *trust.Box) { b.Private = []string{"registry.corp.example:443"} }), "private registry.corp.example:443"},
		{"config: true", with(func(b *trust.Box) { b.Config = []string{"/srv/work"} }), "config: true on /srv/work"},
		{"a passed variable", with(func(b *trust.Box) { b.Env = []string{"AWS_SECRET_ACCESS_KEY"} }), "env AWS_SECRET_ACCESS_KEY"},
		{"more memory", with(func(b *trust.Box) { b.Memory = 4 << 30 }), "memory"},
		{"mode off", with(func(b *trust.Box) { *b = trust.Box{Off: true} }), "mode: off"},
		{"no write path", with(func(b *trust.Box) { b.Write = nil }), ""},
		{"a folder inside the write path", with(func(b *trust.Box) { b.Write = []string{"/srv/work/sub"} }), ""},
		{"a read path inside the write path", with(func(b *trust.Box) { b.Read = append(b.Read, "/srv/work/x") }), ""},
		{"a subdomain of a wildcard", with(func(b *trust.Box) { b.Network = []string{"raw.githubusercontent.com"} }), ""},
		{"less memory", with(func(b *trust.Box) { b.Memory = 64 << 20 }), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := pinsAt(t)
			review(t, p, trust.Settings{}, trust.Listing{Upstream: "up", Identity: pinned, Tools: []trust.ToolDef{clean1}})
			st, ev := review(t, p, trust.Settings{}, trust.Listing{Upstream: "up", Identity: tc.id, Tools: []trust.ToolDef{clean1}})
			s := st["up"]["add"]
			if tc.wider == "" {
				if s.State != trust.Pinned || kinds(ev) != "narrowed" && kinds(ev) != "" { // "": the same ground, said otherwise
					t.Fatalf("narrowing: %+v, events %s", s, kinds(ev))
				}
				// The narrower box is pinned: the old one is now a widening
				// (unless it covers the same ground).
				if st, _ := review(t, p, trust.Settings{}, trust.Listing{Upstream: "up", Identity: pinned, Tools: []trust.ToolDef{clean1}}); tc.name != "a folder inside the write path" && tc.name != "a read path inside the write path" && st["up"]["add"].State != trust.Quarantined {
					t.Errorf("the old box after narrowing: %+v", st["up"]["add"])
				}
				return
			}
			if s.State != trust.Quarantined || !strings.Contains(s.Why, "its box grants more: ") || !strings.Contains(s.Why, tc.wider) || kinds(ev) != "identity_changed" {
				t.Fatalf("widening: %+v, events %s", s, kinds(ev))
			}
			if _, err := p.Approve("up/*", "bob", t0); err != nil {
				t.Fatal(err)
			}
			if st, _ := review(t, p, trust.Settings{}, trust.Listing{Upstream: "up", Identity: tc.id, Tools: []trust.ToolDef{clean1}}); st["up"]["add"].State != trust.Pinned {
				t.Errorf("after approval: %+v", st["up"]["add"])
			}
		})
	}
	// A pin from before the box: any box but off narrows it.
	p, _ := pinsAt(t)
	review(t, p, trust.Settings{}, trust.Listing{Upstream: "up", Identity: id1, Tools: []trust.ToolDef{clean1}})
	if st, ev := review(t, p, trust.Settings{}, trust.Listing{Upstream: "up", Identity: pinned, Tools: []trust.ToolDef{clean1}}); st["up"]["add"].State != trust.Pinned || kinds(ev) != "narrowed" {
		t.Errorf("a box where there was none: %+v %s", st["up"]["add"], kinds(ev))
	}
}

// TestResolvedInThePin: what a launcher (npx) resolved the upstream's
// package to is part of its identity: another version of the package, or
// the same version over another dependency tree, quarantines every tool
// with a reason naming it; a pin made before resolutions were recorded
// takes the first one without a quarantine.
func TestResolvedInThePin(t *testing.T) {
	res := func(version, tree string) trust.Identity {
		id := id1
		id.Resolved = &trust.Resolved{Packages: map[string]string{"@scope/server": version}, Tree: tree}
		return id
	}
	for _, tc := range []struct {
		name string
		id   trust.Identity
		why  string
	}{
		{"another version", res("1.2.4", "bbbb"), `resolved @scope/server to 1.2.4 (pinned: "1.2.3")`},
		{"another tree", res("1.2.3", "bbbb"), "another dependency tree"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := pinsAt(t)
			review(t, p, trust.Settings{}, trust.Listing{Upstream: "up", Identity: res("1.2.3", "aaaa"), Tools: []trust.ToolDef{clean1}})
			st, _ := review(t, p, trust.Settings{}, trust.Listing{Upstream: "up", Identity: res("1.2.3", "aaaa"), Tools: []trust.ToolDef{clean1}})
			if s := st["up"]["add"]; s.State != trust.Pinned {
				t.Fatalf("the same resolution: %+v", s)
			}
			st, ev := review(t, p, trust.Settings{}, trust.Listing{Upstream: "up", Identity: tc.id, Tools: []trust.ToolDef{clean1}})
			if s := st["up"]["add"]; s.State != trust.Quarantined || !strings.Contains(s.Why, tc.why) {
				t.Fatalf("%+v (events %s), want quarantined naming %q", s, kinds(ev), tc.why)
			}
		})
	}
	p, _ := pinsAt(t)
	review(t, p, trust.Settings{}, trust.Listing{Upstream: "up", Identity: id1, Tools: []trust.ToolDef{clean1}})
	st, ev := review(t, p, trust.Settings{}, trust.Listing{Upstream: "up", Identity: res("1.2.3", "aaaa"), Tools: []trust.ToolDef{clean1}})
	if s := st["up"]["add"]; s.State != trust.Pinned || kinds(ev) != "narrowed" {
		t.Fatalf("a pin from before resolutions: %+v, events %s", s, kinds(ev))
	}
	st, _ = review(t, p, trust.Settings{}, trust.Listing{Upstream: "up", Identity: res("1.2.4", "aaaa"), Tools: []trust.ToolDef{clean1}})
	if s := st["up"]["add"]; s.State != trust.Quarantined {
		t.Fatalf("after the first resolution was pinned, another: %+v", s)
	}
}
