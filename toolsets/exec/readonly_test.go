package exec

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/tool"
)

// TestWriteOutsideIsViolation: a write anywhere but the workspace and /tmp
// fails, and the result is a sandbox_violation naming the path, even when
// the command goes on and exits 0.
func TestWriteOutsideIsViolation(t *testing.T) {
	ex := toolMap(t, Options{Root: t.TempDir()})["execute_command"]
	cases := []struct{ cmd, path string }{
		{"echo pwned > /etc/x", "/etc/x"},
		{"echo pwned > /etc/x; echo done", "/etc/x"},
		{"echo pwned >> /etc/passwd || true", "/etc/passwd"},
		{"touch /var/tmp/x", "/var/tmp/x"},
		{"cp /etc/group /usr/x", "/usr/x"},
		{"mkdir /opt/x", "/opt/x"},
		{"mkdir -p /srv/a/b", "/srv/a"},
		{"ln -s /etc/group /mnt/x", "/mnt/x"},
		{"echo x > /tmp/f && mv /tmp/f /root/x", "/root/x"},
		{"echo x | tee /home/x", "/home/x"},
		{"echo x > ~/.bashrc", "/home/sandbox/.bashrc"},
		{"touch /x", "/x"},
		{"touch /run/x", "/run/x"},
		{"touch /dev/x", "/dev/x"},
		{"dd if=/dev/zero of=/boot/x count=1", "/boot/x"},
		{"python3 -c \"open('/etc/x', 'w')\"", "/etc/x"},
		{"node -e \"require('fs').writeFileSync('/usr/local/x', '')\"", "/usr/local/x"},
		{"git config --global user.name pwned", "/home/sandbox/.gitconfig"},
		{"npm config set registry https://attacker.example/", "/home/sandbox/.npmrc"},
		{"rm -f /etc/passwd", "/etc/passwd"},
		{"sed -i s/a/b/ /etc/passwd", ""},
	}
	for _, c := range cases {
		t.Run(c.cmd, func(t *testing.T) {
			// Approved: what the dangerous-command check asks about
			// (/root) runs, and the sandbox stops it.
			r := call(t, ex, Approved(context.Background()), map[string]any{"command": c.cmd})
			if r.Error == nil || r.Error.Type != tool.SandboxViolation {
				t.Fatalf("got %+v\n%s", r.Error, r.Text())
			}
			if c.path != "" && (r.Error.Details["path"] != c.path || !strings.Contains(r.Error.Message, c.path)) {
				t.Fatalf("path %v, message %q, want %s", r.Error.Details["path"], r.Error.Message, c.path)
			}
			if r.Error.Suggestion == "" || r.Error.Details["evidence"] == nil {
				t.Fatalf("%+v", r.Error)
			}
		})
	}
}

// TestWritableStaysOrdinary: writes to the workspace, /tmp and the devices
// are ordinary results, and so are failures that are not the sandbox's and
// the usual tools' probes of a network that is not there.
func TestWritableStaysOrdinary(t *testing.T) {
	ex := toolMap(t, Options{Root: t.TempDir()})["execute_command"]
	for _, cmd := range []string{
		"echo x > f && cat f", "mkdir -p a/b && touch a/b/c", "echo x > /tmp/x", "echo x > /dev/null",
		"echo x > /dev/shm/x", "python3 -c \"open('/tmp/p', 'w').write('x')\"", "ls /etc > /dev/null",
		"echo 'Read-only file system is a phrase' > notes.txt", "cat missing.txt; exit 0",
		"pip --version", "python3 -m pip list", "npm ls", "npm init -y", "go env GOCACHE", // IPv6 probes, update checks
	} {
		r := call(t, ex, context.Background(), map[string]any{"command": cmd})
		if r.Error != nil {
			t.Errorf("%s: %s", cmd, r.Error.Text())
		}
	}
	// A real IPv6 attempt fails, and is one.
	for _, cmd := range []string{`python3 -c "import socket; socket.create_connection(('::1', 80))"`, "curl -s http://[::1]:1/"} {
		r := call(t, ex, context.Background(), map[string]any{"command": cmd})
		if r.Error == nil || r.Error.Type != tool.SandboxViolation {
			t.Errorf("%s: %+v", cmd, r.Error)
		}
	}
}

// TestGitReadOnly: git's reading commands work in a repository of the
// workspace whose .git the tool keeps read-only, with a read-only home.
func TestGitReadOnly(t *testing.T) {
	ws := t.TempDir()
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-c", "user.name=n", "-c", "user.email=e@x", "-C", ws}, args...)...)
		cmd.Env = []string{"HOME=" + ws, "PATH=" + os.Getenv("PATH")}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", ".")
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "a.txt")
	git("commit", "-qm", "first")
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ex := toolMap(t, Options{Root: ws})["execute_command"]
	for _, c := range []struct{ cmd, want string }{
		{"git status --short", " M a.txt\n"},
		{"git diff --stat", " a.txt | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n"},
		{"git log --format=%s", "first\n"},
		{"git show --stat --format=%s HEAD | head -1", "first\n"},
		{"git branch --show-current | wc -l", "1\n"},
	} {
		r := call(t, ex, context.Background(), map[string]any{"command": c.cmd})
		if r.Error != nil || r.Structured.(Output).Stdout != c.want {
			t.Errorf("%s: %+v\n%s", c.cmd, r.Error, r.Text())
		}
	}
}
