package policy

import (
	"path"
	"testing"
)

// TestCredentialPaths: each entry is a clean relative path with a reason,
// listed once.
func TestCredentialPaths(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range CredentialPaths() {
		t.Run(c.Name, func(t *testing.T) {
			if c.Name == "" || path.Clean(c.Name) != c.Name || path.IsAbs(c.Name) || c.Name[0] != '.' || c.Reason == "" {
				t.Errorf("entry %+v: want a clean path from the home folder (starting with a dot) and a reason", c)
			}
			if seen[c.Name] {
				t.Errorf("%s listed twice", c.Name)
			}
			seen[c.Name] = true
		})
	}
}
