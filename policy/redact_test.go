package policy_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/policy"
)

func TestRedact(t *testing.T) {
	r, err := policy.NewRedactor(policy.DefaultSecrets())
	if err != nil {
		t.Fatal(err)
	}
	key := "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----"
	for _, tc := range []struct{ in, want string }{
		{"aws AKIAIOSFODNN7EXAMPLE done", "aws [REDACTED:aws_access_key] done"},
		{"token ghp_" + strings.Repeat("a1B2", 9) + " ok", "token [REDACTED:github_token] ok"},
		{"OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuv123", "OPENAI_API_KEY=[REDACTED:openai_key]"},
		{"x-api-key: sk-ant-api03-abcdefghijklmnopqrstuvwx", "x-api-key: [REDACTED:anthropic_key]"},
		{"key:\n" + key + "\nafter", "key:\n[REDACTED:private_key]\nafter"},
		{"db=postgres://app:s3cr3tpass@db:5432/x", "db=postgres://app:[REDACTED:url_password]@db:5432/x"},
		{`"password": "hunter2hunter2"`, `"password": "[REDACTED:assigned_secret]"`},
		{"DB_PASSWORD=correcthorsebattery", "DB_PASSWORD=[REDACTED:assigned_secret]"},
		// Prose and ordinary code are left alone.
		{"the password policy needs 8 characters", "the password policy needs 8 characters"},
		{"func skip() { return sk }", "func skip() { return sk }"},
		{"AKIA is a prefix", "AKIA is a prefix"},
	} {
		got, n := r.Redact(tc.in)
		if got != tc.want {
			t.Errorf("Redact(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
		if (n > 0) != (got != tc.in) {
			t.Errorf("Redact(%q) counted %d", tc.in, n)
		}
	}
	if _, err := policy.NewRedactor([]policy.SecretPattern{{Name: "bad", Regexp: "("}}); err == nil {
		t.Error("a bad pattern must be an error")
	}
	var none *policy.Redactor
	if s, n := none.Redact("AKIAIOSFODNN7EXAMPLE"); n != 0 || s != "AKIAIOSFODNN7EXAMPLE" {
		t.Error("a nil Redactor must change nothing")
	}
}

func TestAllowedDomains(t *testing.T) {
	p := policy.Default()
	p.Allow = []string{"http_request(domain:api.github.com)", "WebFetch(domain:*.example.org)", "read_file", "WebFetch(domain:*)"}
	got := p.AllowedDomains()
	if len(got) != 2 || got[0] != "api.github.com" || got[1] != "*.example.org" {
		t.Errorf("AllowedDomains = %v", got)
	}
	p.Deny = []string{"WebFetch(domain:bad.example.org)", "Bash(curl:*)", "http_request(domain:*.evil.test)"}
	p.Ask = []string{"WebFetch(domain:Ask.Example.org.)", "read_file(secret/**)"}
	if got, want := p.DeniedDomains(), []string{"bad.example.org", "*.evil.test"}; !slices.Equal(got, want) {
		t.Errorf("DeniedDomains = %v, want %v", got, want)
	}
	if got, want := p.AskedDomains(), []string{"ask.example.org"}; !slices.Equal(got, want) {
		t.Errorf("AskedDomains = %v, want %v", got, want)
	}
	p.Deny = append(p.Deny, "WebFetch(domain:*)")
	if got := p.DeniedDomains(); !slices.Contains(got, "*") {
		t.Errorf("DeniedDomains without * for domain:* = %v", got)
	}
}
