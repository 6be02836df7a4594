package runner

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"testing"
)

// TestToken: Token is HMAC-SHA256(secret, id) in hex (the gateway side
// computes the same); Check takes it in hex or base64url, and nothing else.
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
		if !Check(secret, "conv-a", auth) {
			t.Errorf("Check(%q) = false", auth)
		}
	}
	for _, auth := range []string{"", "Bearer", "Bearer ", hex.EncodeToString(want), "Basic " + hex.EncodeToString(want),
		"Bearer " + Token(secret, "conv-b"), "Bearer " + Token([]byte("another secret, long"), "conv-a"),
		"Bearer " + hex.EncodeToString(want[:16]), "Bearer " + base64.StdEncoding.EncodeToString(want)} {
		if Check(secret, "conv-a", auth) {
			t.Errorf("Check(%q) = true", auth)
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
