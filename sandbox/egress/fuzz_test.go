package egress

import (
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

// FuzzCheckHost: whatever the host, the checks never panic, an admitted
// name is plain lower-case ASCII that matches its rule at a dot boundary,
// and nothing admitted is an IP address unless an IP entry admitted it.
func FuzzCheckHost(f *testing.F) {
	for _, s := range []string{"a.example.com", "example.com", "badexample.com", "example.com.evil.net",
		"A.EXAMPLE.COM.", "xn--bcher-kva.example", "bücher.example", "0x7f.1", "2130706433", "[::1]",
		"::ffff:127.0.0.1", "1.1.1.1", "a..b", "ｅｘａｍｐｌｅ.com", "a.example.com%00", "[fe80::1%25eth0]",
		"metadata.google.internal", "x.example.com\u200d", "127.1", "a.b.c.d.e.f"} {
		f.Add(s, 443)
	}
	p, err := NewPolicy(PolicyConfig{Allow: []string{"*.example.com", "pkgs.example.org", "bücher.example", "1.1.1.1"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string, port int) {
		norm, rule, err := p.CheckHost(s, port)
		if err != nil {
			return
		}
		if port != 80 && port != 443 {
			t.Fatalf("%q: port %d admitted", s, port)
		}
		if ip, e := netip.ParseAddr(norm); e == nil {
			if rule != "1.1.1.1" || ip.Unmap() != netip.MustParseAddr("1.1.1.1") {
				t.Fatalf("%q: the address %s admitted by %q", s, norm, rule)
			}
			return
		}
		for i := 0; i < len(norm); i++ {
			c := norm[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
				t.Fatalf("%q: admitted as %q, which holds %q", s, norm, c)
			}
		}
		switch rule {
		case "*.example.com":
			if !strings.HasSuffix(norm, ".example.com") || norm == ".example.com" {
				t.Fatalf("%q: %q admitted by the wildcard", s, norm)
			}
		case "pkgs.example.org":
			if norm != "pkgs.example.org" {
				t.Fatalf("%q: %q admitted by pkgs.example.org", s, norm)
			}
		case "bücher.example":
			if norm != "xn--bcher-kva.example" {
				t.Fatalf("%q: %q admitted by bücher.example", s, norm)
			}
		default:
			t.Fatalf("%q: admitted by %q", s, rule)
		}
		// The name the checks admitted is stable: checking it again gives itself.
		again, _, err := p.CheckHost(norm, port)
		if err != nil || again != norm {
			t.Fatalf("%q: %q re-checks as %q, %v", s, norm, again, err)
		}
	})
}

// FuzzURLHost checks hosts the way the HTTP tools meet them: inside URLs.
func FuzzURLHost(f *testing.F) {
	for _, s := range []string{"http://a.example.com/", "https://user@a.example.com/", "http://[::1]:80/",
		"http://0x7f.1/", "http://a.example.com.evil.net/", "http://a.example.com\\@evil.net/", "http://2852039166/"} {
		f.Add(s)
	}
	p, err := NewPolicy(PolicyConfig{Allow: []string{"*.example.com"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := url.Parse(s)
		if err != nil {
			return
		}
		norm, _, err := p.CheckHost(u.Hostname(), 443)
		if err == nil && !strings.HasSuffix(norm, ".example.com") {
			t.Fatalf("%q: host %q admitted as %q", s, u.Hostname(), norm)
		}
	})
}
