package cli

import (
	"slices"
	"testing"
)

// TestNetworkReachable: the commands' proxy offers only the allowed
// domains that the deny and ask rules leave reachable, and there is no
// proxy (no network, as the tools' description then says) when none is
// left; http_request keeps the whole allow list, asking where told to.
func TestNetworkReachable(t *testing.T) {
	for _, c := range []struct {
		name             string
		allow, deny, ask []string
		want             []string // nil: no proxy
	}{
		{"nothing refused", []string{"a.example", "*.b.example"}, nil, nil, []string{"a.example", "*.b.example"}},
		{"ask everything", []string{"a.example", "*.b.example"}, nil, []string{"*"}, nil},
		{"deny everything", []string{"a.example"}, []string{"*"}, nil, nil},
		{"ask one", []string{"a.example", "*.b.example"}, nil, []string{"a.example"}, []string{"*.b.example"}},
		{"deny a wildcard over an entry", []string{"x.b.example", "c.example"}, []string{"*.b.example"}, nil, []string{"c.example"}},
		{"deny a wildcard over a wildcard", []string{"*.x.b.example", "c.example"}, nil, []string{"*.b.example"}, []string{"c.example"}},
		{"a narrower deny leaves the wildcard", []string{"*.b.example"}, []string{"x.b.example"}, nil, []string{"*.b.example"}},
		{"one port of two", []string{"a.example"}, []string{"a.example:443"}, nil, []string{"a.example"}},
		{"the entry's own port", []string{"a.example:8443"}, []string{"a.example:8443"}, nil, nil},
		{"every port", []string{"a.example", "a.example:8080"}, nil, []string{"a.example"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			n, err := newNetwork(domainRules{allow: c.allow, deny: c.deny, ask: c.ask})
			if err != nil {
				t.Fatal(err)
			}
			defer n.Close()
			if c.want == nil {
				if n.proxy != nil {
					t.Fatalf("a proxy for %v", n.proxy.Policy().Allowed())
				}
			} else if n.proxy == nil || !slices.Equal(n.proxy.Policy().Allowed(), c.want) {
				t.Fatalf("got %v, want %v", n, c.want)
			}
			if !slices.Equal(n.web.Allowed(), c.allow) {
				t.Errorf("http_request's list: %v", n.web.Allowed())
			}
		})
	}
}
