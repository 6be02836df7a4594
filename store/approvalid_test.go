package store

import (
	"regexp"
	"strings"
	"testing"
)

// TestValidApprovalID checks the hand-written check against the expression
// it replaces, byte for byte.
func TestValidApprovalID(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	ids := []string{
		"", "a", "Z", "0", "_", "-", "abc-DEF_123", strings.Repeat("a", 63), strings.Repeat("a", 64),
		strings.Repeat("a", 65), strings.Repeat("-", 64) + "x", "a b", "a\n", "\na", "a\x00", "a.b", "a/b", "a:b",
		"../x", "é", "a\u00e9", "\xff", "a\xffb", "ａ", "a*", "a?", "{id}", "a\tb", " a", "a ", "a+b", "%41",
	}
	for c := 0; c < 256; c++ {
		ids = append(ids, string(rune(c)), "x"+string([]byte{byte(c)}), string([]byte{byte(c)})+"x")
	}
	for _, id := range ids {
		if got, want := validApprovalID(id), re.MatchString(id); got != want {
			t.Errorf("validApprovalID(%q) = %v, want %v", id, got, want)
		}
	}
}
