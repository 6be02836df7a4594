package exec

import (
	"os"
	"path/filepath"
	"testing"
)

func TestContainment(t *testing.T) {
	root := t.TempDir()
	hostOnly := filepath.Join(t.TempDir(), "secret.txt") // exists on the host, outside the workspace
	os.WriteFile(hostOnly, []byte("x"), 0o600)
	for _, tc := range []struct {
		stderr  string
		network bool
		want    bool
	}{
		{"sh: 1: cannot create /etc/passwd: Read-only file system", false, true},
		{"mount: /mnt: permission denied. Operation not permitted", false, true},
		{"Error: EROFS: read-only file system, open '.git/config'", false, true},
		{"Error: EPERM: operation not permitted, chmod 'x'", false, true},
		{"curl: (6) Could not resolve host: example.com", false, true},
		{"curl: (6) Could not resolve host: example.com", true, false}, // with a proxy, a DNS failure is the network's
		{"cat: " + hostOnly + ": No such file or directory", false, true},
		{"FileNotFoundError: [Errno 2] No such file or directory: '" + hostOnly + "'", false, true},
		{"Error: ENOENT: no such file or directory, open '" + hostOnly + "'", false, true},
		{"cat: /etc/shadow: Permission denied", false, true},
		// Ordinary failures stay results.
		{"cat: " + filepath.Join(root, "missing.txt") + ": No such file or directory", false, false},
		{"cat: missing.txt: No such file or directory", false, false},
		{"cat: /definitely/not/on/this/host: No such file or directory", false, false},
		{"sh: 1: ./build.sh: Permission denied", false, false},
		{"--- FAIL: TestThing (0.00s)", false, false},
	} {
		_, _, got := containment([]byte(tc.stderr), root, tc.network)
		if got != tc.want {
			t.Errorf("containment(%q, network=%v) = %v, want %v", tc.stderr, tc.network, got, tc.want)
		}
	}
}
