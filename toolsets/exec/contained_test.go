package exec

import (
	"os"
	"path/filepath"
	"strings"
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
		_, got := containment([]byte(tc.stderr), root, tc.network)
		if got != tc.want {
			t.Errorf("containment(%q, network=%v) = %v, want %v", tc.stderr, tc.network, got, tc.want)
		}
	}
}

// TestReadOnlyPath: the path of a refused write is found in the messages
// of coreutils, shells, Python, Node, git, sed, npm and others, quoted or
// not, and said to be outside the workspace or a protected file in it.
func TestReadOnlyPath(t *testing.T) {
	root := "/srv/project"
	for _, tc := range []struct{ line, path string }{
		{"touch: cannot touch '/etc/x': Read-only file system", "/etc/x"},
		{"touch: cannot touch ‘/etc/x’: Read-only file system", "/etc/x"},
		{"mkdir: cannot create directory '/opt/a b': Read-only file system", "/opt/a b"},
		{"cp: cannot create regular file '/usr/bin/x': Read-only file system", "/usr/bin/x"},
		{"mv: cannot create regular file '/var/tmp/x': Read-only file system", "/var/tmp/x"},
		{"mv: inter-device move failed: '/tmp/f' to '/root/x'; unable to remove target: Read-only file system", "/root/x"},
		{"mv: inter-device move failed: ‘/tmp/f’ to ‘/opt/x’; unable to remove target: Read-only file system", "/opt/x"},
		{"ln: failed to create symbolic link '/home/sandbox/.bashrc': Read-only file system", "/home/sandbox/.bashrc"},
		{"rm: cannot remove '/etc/passwd': Read-only file system", "/etc/passwd"},
		{"dd: failed to open '/x': Read-only file system", "/x"},
		{"tee: /root/x: Read-only file system", "/root/x"},
		{"bash: /etc/x: Read-only file system", "/etc/x"},
		{"bash: line 1: /run/x: Read-only file system", "/run/x"},
		{"/bin/sh: 1: cannot create /etc/x: Read-only file system", "/etc/x"},
		{"sh: 1: cannot create /srv/x: Read-only file system", "/srv/x"},
		{"zsh:1: read-only file system: /mnt/x", "/mnt/x"},
		{"sed: couldn't open temporary file /etc/sedAbC12: Read-only file system", "/etc/sedAbC12"},
		{"error: could not lock config file /home/sandbox/.gitconfig: Read-only file system", "/home/sandbox/.gitconfig"},
		{"fatal: could not create work tree dir '/opt/repo': Read-only file system", "/opt/repo"},
		{"OSError: [Errno 30] Read-only file system: '/etc/x'", "/etc/x"},
		{"PermissionError: [Errno 30] Read-only file system: \"/usr/lib/x\"", "/usr/lib/x"},
		{"Error: EROFS: read-only file system, open '/etc/x'", "/etc/x"},
		{"Error: EROFS: read-only file system, mkdir '/home/sandbox/.npm'", "/home/sandbox/.npm"},
		{"npm ERR! rofs EROFS: read-only file system, open '/home/sandbox/.npmrc'", "/home/sandbox/.npmrc"},
		{"Error: EROFS: read-only file system, open '.git/config'", ".git/config"},
		{"touch: cannot touch '../../etc/x': Read-only file system", "../../etc/x"},
		{"open /etc/x: read-only file system", "/etc/x"},
		{"cc1: fatal error: /usr/include/x.h: Read-only file system", "/usr/include/x.h"},
		{"cannot write: Read-only file system", ""},
		{"write error: Read-only file system", ""},
	} {
		if got := readOnlyPath(tc.line); got != tc.path {
			t.Errorf("readOnlyPath(%q) = %q, want %q", tc.line, got, tc.path)
		}
		if tc.path == "" {
			continue // no path given: still a violation, without one
		}
		st, ok := containment([]byte("noise\n"+tc.line+"\n"), root, false)
		if !ok || st.path != tc.path || st.evidence != tc.line || !strings.Contains(st.what, tc.path) {
			t.Errorf("containment(%q) = %+v, %v", tc.line, st, ok)
		}
		if inside := !strings.HasPrefix(tc.path, "/") && !strings.HasPrefix(tc.path, ".."); inside != strings.Contains(st.what, "protected file of the workspace") {
			t.Errorf("%q: %s", tc.line, st.what)
		}
	}
}
