package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/policy"
)

// TestProxyRedactsStructuredBesideEscapes puts the gateway in front of an
// upstream (a real process) whose structured value holds a secret of each
// default pattern right before or after each character JSON escapes (a
// newline, any control character, '"', '\', '<', '>', '&', U+2028,
// U+2029) or another non-word character, in values, keys, array items and
// deep: each string reaches the client redacted exactly as a text block
// is. The gateway searched the HTML-escaped encoding, where "\u003cghp_…"
// or "\nAKIA…" has no word boundary before the secret, and let it pass.
func TestProxyRedactsStructuredBesideEscapes(t *testing.T) {
	inject := buildInjectServer(t)
	secrets := []string{
		"AKIAIOSFODNN7EXAMPLE", "ghp_" + strings.Repeat("x1Y2", 9), "github_pat_" + strings.Repeat("a1_B", 6),
		"sk-ant-api03-abcdefghijklmnopqrstuvwx", "sk-proj-abcdefghijklmnopqrstuvwx", "xoxb-1234567890-abcdefghij",
		"AIza" + strings.Repeat("0a-B_", 6) + "x0aBc", "sk_live_" + strings.Repeat("0aB", 8),
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijklmnop",
		"-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90\n-----END RSA PRIVATE KEY-----",
		"https://user:hunter22@example.org", "password=hunter2hunter2",
	}
	var beside []string
	for c := range 0x20 {
		beside = append(beside, string(rune(c)))
	}
	beside = append(beside, `"`, `\`, "<", ">", "&", "\u2028", "\u2029", "é", " ", "'")
	var strs []string
	for _, s := range secrets {
		for _, c := range beside {
			strs = append(strs, c+s, s+c)
		}
	}
	keys := map[string]any{}
	for _, s := range strs {
		keys[s] = 1
	}
	args := map[string]any{"values": strs, "deep": map[string]any{"a": []any{map[string]any{"b": strs}}}, "keys": keys}

	dir := t.TempDir()
	config := writeFile(t, filepath.Join(dir, "gateway.yaml"), "servers:\n  - name: ev\n    command: "+strconv.Quote(inject)+"\n")
	pol := writeFile(t, filepath.Join(dir, "policy.yaml"), "allow:\n  - ev__mirror\n")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, stderr := proxySession(t, ctx, config, "--policy", pol, "--audit", filepath.Join(dir, "audit.jsonl"))
	r := callTool(t, ctx, cs, "ev__mirror", args)
	out, err := json.Marshal(r.StructuredContent)
	if r.IsError || err != nil {
		t.Fatalf("%s %v\n%s", text(r), err, stderr)
	}
	for _, s := range secrets {
		if strings.Contains(string(out), s) || strings.Contains(string(out), strings.ReplaceAll(s, "\n", `\n`)) {
			t.Errorf("%q reached the client: %s", s, out)
		}
	}
	var got struct {
		Values []string
		Deep   struct{ A []struct{ B []string } }
		Keys   map[string]any
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Values) != len(strs) || len(got.Deep.A) != 1 || len(got.Deep.A[0].B) != len(strs) {
		t.Fatalf("the value lost its shape: %s", out)
	}
	red, err := policy.NewRedactor(policy.DefaultSecrets())
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range strs {
		want, _ := red.Redact(s)
		if got.Values[i] != want || got.Deep.A[0].B[i] != want {
			t.Errorf("%q: redacted to %q and %q, as a text %q", s, got.Values[i], got.Deep.A[0].B[i], want)
		}
		if _, ok := got.Keys[want]; !ok {
			t.Errorf("key %q: not redacted as a text (%q)", s, want)
		}
	}
}
