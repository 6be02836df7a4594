package policy

import (
	"slices"
	"testing"
)

// TestDomainsSkipsOnlyRulesWithoutDomains checks domains' shortcut (a rule
// without "domain:" is not compiled) against compiling every rule.
func TestDomainsSkipsOnlyRulesWithoutDomains(t *testing.T) {
	all := func(rules []string, any bool) []string {
		var out []string
		for _, text := range rules {
			r, err := compileRule(text)
			switch {
			case err != nil || r.dom == nil || r.dom.any && !any:
			case r.dom.any:
				out = append(out, "*")
			case r.dom.wildcard:
				out = append(out, "*."+r.dom.host)
			default:
				out = append(out, r.dom.host)
			}
		}
		return out
	}
	rules := Default().Deny // every protected path
	rules = append(rules,
		"http_request(domain:api.github.com)", "WebFetch( domain:*.example.org )", "WebFetch(domain:*)",
		"http_request(domain:)", "http_request(domain:bad host)", "http_request(domain:Ask.Example.org.)",
		"read_file(./domain:x/**)", "read_file(domain:notes/**)", "Bash(curl domain:x)", "execute_command(domain:x)",
		"domain:x", "WebFetch(domain:x", "WebFetch(xdomain:y)", "WebFetch(DOMAIN:y)", "*(domain:any.test)",
		"http_request(domain:[::1])", "http_request(domain:127.0.0.1)", "http_request(domain:*.*.test)",
	)
	for _, any := range []bool{false, true} {
		if got, want := domains(rules, any), all(rules, any); !slices.Equal(got, want) {
			t.Errorf("domains(any=%v) = %q, want %q", any, got, want)
		}
	}
}
