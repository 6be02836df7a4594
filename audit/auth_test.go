package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAuthMember(t *testing.T) {
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(file, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		auth Auth
		want string
	}{
		{Auth{}, `"auth":{"kind":"local"}`},
		{Auth{Kind: AuthLocal}, `"auth":{"kind":"local"}`},
		{Auth{Kind: AuthJWT, Issuer: "https://id.example.com", JTI: "j-\"1"}, `"auth":{"kind":"jwt","issuer":"https://id.example.com","jti":"j-\"1"}`},
		{Auth{Kind: AuthJWT, Issuer: "https://id.example.com"}, `"auth":{"kind":"jwt","issuer":"https://id.example.com","jti":""}`},
		{Auth{Kind: AuthAPIKey, Key: "9f86d081", Issuer: "ignored"}, `"auth":{"kind":"api_key","key":"9f86d081"}`},
	}
	for _, c := range cases {
		if err := l.Append(context.Background(), Record{Principal: "p", Tool: "t", Auth: c.auth}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(bytes.NewReader(data))
	if err != nil || !rep.OK {
		t.Fatalf("verify: %+v %v", rep, err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	for i, c := range cases {
		if !strings.Contains(lines[i], `"principal":"p",`+c.want+`,"tool":"t"`) {
			t.Errorf("line %d: %s lacks %s", i+1, lines[i], c.want)
		}
		var rec Record
		if err := json.Unmarshal([]byte(lines[i]), &rec); err != nil {
			t.Fatal(err)
		}
		want := c.auth
		if want.Kind == "" {
			want.Kind = AuthLocal
		}
		if want.Kind == AuthAPIKey {
			want.Issuer = ""
		}
		if rec.Auth != want {
			t.Errorf("line %d read back as %+v, want %+v", i+1, rec.Auth, want)
		}
	}
}
