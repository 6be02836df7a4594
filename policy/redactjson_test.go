package policy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// defaultSecretSamples holds one secret of each default pattern.
var defaultSecretSamples = map[string]string{
	"private_key":     "-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\n-----END RSA PRIVATE KEY-----",
	"aws_access_key":  "AKIAIOSFODNN7EXAMPLE",
	"github_token":    "ghp_" + strings.Repeat("a1B2", 9),
	"anthropic_key":   "sk-ant-api03-abcdefghijklmnopqrstuvwx",
	"openai_key":      "sk-proj-abcdefghijklmnopqrstuvwx",
	"slack_token":     "xoxb-1234567890-abcdefghij",
	"google_api_key":  "AIza" + strings.Repeat("0a-B_", 6) + "x0aBc",
	"stripe_key":      "sk_live_" + strings.Repeat("0aB", 8),
	"jwt":             "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijklmnop",
	"url_password":    "https://user:hunter22@example.org",
	"assigned_secret": "password=hunter2hunter2",
}

// besideSecrets are the characters a string may hold next to a secret
// that encoding/json writes otherwise (escapes, U+FFFD) or that are not
// word characters.
func besideSecrets() []string {
	var out []string
	for c := range 0x20 {
		out = append(out, string(rune(c)))
	}
	return append(out, `"`, `\`, "<", ">", "&", "\u2028", "\u2029", "é", "\xff", "\x7f", " ", "'", "/", "\u212a", "\ufffd")
}

// structuredAt puts s at one place of a value (an object's value, a key,
// an array's item, deep inside) and reads it back from a redacted value.
var structuredAt = []struct {
	name string
	put  func(s string) any
	get  func(v any) (string, bool)
}{
	{"value", func(s string) any { return map[string]any{"k": s} }, func(v any) (string, bool) {
		s, ok := v.(map[string]any)["k"].(string)
		return s, ok
	}},
	{"key", func(s string) any { return map[string]any{s: 1.0} }, func(v any) (string, bool) {
		m := v.(map[string]any)
		for k := range m {
			return k, len(m) == 1
		}
		return "", false
	}},
	{"item", func(s string) any { return []any{"x", s, 1.0} }, func(v any) (string, bool) {
		a, _ := v.([]any)
		if len(a) != 3 {
			return "", false
		}
		s, ok := a[1].(string)
		return s, ok
	}},
	{"deep", func(s string) any { return map[string]any{"a": []any{map[string]any{"b": []any{s}}}} }, func(v any) (string, bool) {
		defer func() { recover() }()
		s, ok := v.(map[string]any)["a"].([]any)[0].(map[string]any)["b"].([]any)[0].(string)
		return s, ok
	}},
}

// redactedAsText fails unless s, at each place of a structured value,
// comes out of RedactJSON exactly as Redact makes it as a text block (of
// the text the value holds: a bad byte is U+FFFD in JSON).
func redactedAsText(t testing.TB, r *Redactor, s string) {
	var text string
	if b, _ := json.Marshal(s); json.Unmarshal(b, &text) != nil {
		t.Fatalf("%q does not encode", s)
	}
	want, wantN := r.Redact(text)
	for _, at := range structuredAt {
		enc, err := json.Marshal(at.put(s))
		if err != nil {
			t.Fatal(err)
		}
		out, n, _ := r.RedactJSON(string(enc))
		var v any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("%s %q: RedactJSON gave %s: %v", at.name, s, out, err)
		}
		got, ok := at.get(v)
		if !ok || got != want || n != wantN {
			t.Errorf("%s %q: RedactJSON gave %q (%d), Redact gives %q (%d)", at.name, s, got, n, want, wantN)
		}
	}
}

// TestRedactJSONBesideEscapes: a secret of each default pattern, with any
// character before or after it, is redacted in a structured value at any
// place exactly as in a text block. Before, the encoding was searched:
// "\u003cghp_..." or "\nAKIA..." has no word boundary before the secret.
func TestRedactJSONBesideEscapes(t *testing.T) {
	r := jsonRedactors(t)[0]
	for name, secret := range defaultSecretSamples {
		if _, n := r.Redact(secret); n != 1 {
			t.Fatalf("%s: the sample is not one secret", name)
		}
		for _, c := range besideSecrets() {
			for _, s := range []string{c + secret, secret + c, "x" + c + secret + c + "y"} {
				redactedAsText(t, r, s)
				if out, _ := r.Redact(s); strings.Contains(out, secret) {
					t.Errorf("%q: Redact leaves the secret", s)
				}
			}
		}
	}
	// Secrets across strings are still found: a key and its value.
	for raw, want := range map[string]string{
		`{"password":"hunter2hunter2"}`:                    `{"password":"[REDACTED:assigned_secret]"}`,
		`{"api_key": "\u003chunter2hunter2", "n": 1}`:      `{"api_key":"[REDACTED:assigned_secret]","n":1}`,
		`{"note":"line\n  AKIAIOSFODNN7EXAMPLE","k":"ok"}`: `{"k":"ok","note":"line\n  [REDACTED:aws_access_key]"}`,
	} {
		var v any
		if err := json.Unmarshal([]byte(raw), &v); err != nil {
			t.Fatal(err)
		}
		enc, _ := json.Marshal(v)
		out, n, _ := r.RedactJSON(string(enc))
		if err := json.Unmarshal([]byte(out), &v); err != nil || n != 1 {
			t.Fatalf("%s: %s (%d)", raw, out, n)
		}
		if got, _ := json.Marshal(v); string(got) != want {
			t.Errorf("%s: redacted to %s, want %s", raw, got, want)
		}
	}
	if out, n, _ := r.RedactJSON(`{"k":"plain"}`); n != 0 || out != `{"k":"plain"}` {
		t.Errorf("a value without secrets changed: %s", out)
	}
}

// FuzzRedactJSON: a string in a structured value is redacted exactly as
// the same string in a text block (the differential of the two).
func FuzzRedactJSON(f *testing.F) {
	for _, secret := range defaultSecretSamples {
		for _, c := range besideSecrets() {
			f.Add(c + secret + c)
		}
	}
	f.Add("password:\n  hunter2hunter2")
	f.Fuzz(func(t *testing.T, s string) {
		for _, r := range jsonRedactors(t) {
			redactedAsText(t, r, s)
		}
	})
}

func ExampleRedactor_RedactJSON() {
	r, _ := NewRedactor(DefaultSecrets())
	fmt.Println(r.RedactJSON(`{"log":"\u003cAKIAIOSFODNN7EXAMPLE\u003e\nghp_` + strings.Repeat("a", 36) + `"}`))
	// Output: {"log":"\u003c[REDACTED:aws_access_key]\u003e\n[REDACTED:github_token]"} 2 false
}
