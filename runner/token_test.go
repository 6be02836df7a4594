package runner

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestToken: Token is HMAC-SHA256(secret, id) in hex (the gateway side
// computes the same); a runner takes it in hex or base64url, and nothing
// else.
func TestToken(t *testing.T) {
	secret := []byte("0123456789abcdef-secret")
	h := hmac.New(sha256.New, secret)
	h.Write([]byte("conv-a"))
	want := h.Sum(nil)
	if got := Token(secret, "conv-a"); got != hex.EncodeToString(want) {
		t.Fatalf("Token = %s, want %x", got, want)
	}
	for _, auth := range []string{"Bearer " + hex.EncodeToString(want), "bearer " + hex.EncodeToString(want),
		"Bearer " + base64.RawURLEncoding.EncodeToString(want)} {
		if !presents(auth, mac(secret, "conv-a")) {
			t.Errorf("%q refused", auth)
		}
	}
	for _, auth := range []string{"", "Bearer", "Bearer ", hex.EncodeToString(want), "Basic " + hex.EncodeToString(want),
		"Bearer " + Token(secret, "conv-b"), "Bearer " + Token([]byte("another secret, long"), "conv-a"),
		"Bearer " + hex.EncodeToString(want[:16]), "Bearer " + base64.StdEncoding.EncodeToString(want)} {
		if presents(auth, mac(secret, "conv-a")) {
			t.Errorf("%q taken", auth)
		}
	}
}

// TestValidID: one folder name, never a path trick.
func TestValidID(t *testing.T) {
	for _, id := range []string{"a", "conv-a", "A_1-b", "0123456789012345678901234567890123456789012345678901234567890ab"} {
		if err := ValidID(id); err != nil {
			t.Errorf("ValidID(%q): %v", id, err)
		}
	}
	for _, id := range []string{"", ".", "..", "a/b", "../a", "-a", "_a", "a.b", "a b", "a\x00", "é",
		"0123456789012345678901234567890123456789012345678901234567890abc"} {
		if ValidID(id) == nil {
			t.Errorf("ValidID(%q) = nil", id)
		}
	}
}

// TestAuthorizedCached: once a sandbox's token was presented its MAC is
// kept, and a request is still checked whole against the id in its path:
// A's token at B, B's at A, an empty, cut or altered token are refused
// once A is kept as before; A's token in base64url or with "bearer" in
// lower case is taken; Delete drops A's MAC, and A's token is checked
// afresh (and kept again) after it.
func TestAuthorizedCached(t *testing.T) {
	secret := []byte("runner-test-secret-0123")
	r, err := New(Options{Dir: t.TempDir(), Secret: secret, Open: func(id, _ string) (Sandbox, error) {
		return Sandbox{MCP: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "sandbox "+id) }),
			Close: func() error { return nil }}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	do := func(id, authorization string) int {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL+"/sandboxes/"+id+"/mcp", nil)
		req.Header.Set("Authorization", authorization)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, id := range []string{"sb-a", "sb-b"} {
		if _, err := r.Ensure(id); err != nil {
			t.Fatal(err)
		}
	}
	a, b := Token(secret, "sb-a"), Token(secret, "sb-b")
	kept := func(id string) bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.macs[id] != nil
	}
	altered := a[:63] + "0"
	if altered == a {
		altered = a[:63] + "1"
	}
	refused := []string{"", "Bearer " + b, "Bearer " + a[:32], "Bearer " + altered, "Bearer", "Basic " + a, a}
	for round, when := range []string{"before A is kept", "once A is kept", "after A's Delete"} {
		if round == 2 {
			if err := r.Delete("sb-a"); err != nil {
				t.Fatal(err)
			}
			if kept("sb-a") {
				t.Fatal("Delete kept A's MAC")
			}
			if _, err := r.Ensure("sb-a"); err != nil {
				t.Fatal(err)
			}
		}
		for _, auth := range refused {
			if code := do("sb-a", auth); code != 401 {
				t.Errorf("%s: %q at A: %d, want 401", when, auth, code)
			}
		}
		if code := do("sb-b", "Bearer "+a); code != 401 {
			t.Errorf("%s: A's token at B: %d, want 401", when, code)
		}
		if round == 0 && kept("sb-a") {
			t.Fatal("a refused token kept A's MAC")
		}
		mac, _ := hex.DecodeString(a)
		for _, auth := range []string{"Bearer " + a, "bearer " + a, "Bearer " + base64.RawURLEncoding.EncodeToString(mac)} {
			if code := do("sb-a", auth); code != 200 {
				t.Errorf("%s: %q at A: %d, want 200", when, auth, code)
			}
		}
		if !kept("sb-a") {
			t.Errorf("%s: A's MAC is not kept after its token was taken", when)
		}
	}
}
