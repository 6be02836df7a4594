//go:build linux

package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// linuxBackends are the backends that must give the same view: the
// native one with a helper started for each command and with helpers
// started ahead (Prestart, as toolgate serve runs it), and bwrap.
func linuxBackends(t *testing.T) map[string]Backend {
	ahead := &Native{Prestart: true}
	t.Cleanup(func() { ahead.Close() })
	return map[string]Backend{"native": &Native{}, "native, started ahead": ahead, "bwrap": &Bwrap{}}
}

// TestReadOnlyWorld: every way of writing to every place outside the
// workspace, /tmp, /dev/shm and the spec's writable paths fails with EROFS
// (the error says "Read-only file system" and names the path), under every
// Linux backend; writes to the writable places keep working.
func TestReadOnlyWorld(t *testing.T) {
	places := []string{
		"/etc/x", "/etc/passwd", "/var/tmp/x", "/var/x", "/var/cache/x", "/var/lib/x", "/usr/x", "/usr/bin/x",
		"/usr/local/x", "/bin/x", "/lib/x", Home + "/.gitconfig", Home + "/.npmrc", Home + "/x", "/root/x",
		"/home/x", "/run/x", "/run/lock", "/opt/x", "/srv/x", "/mnt/x", "/media/x", "/boot/x", "/x", "/dev/x",
	}
	// ways turn a path into a command that writes it; %[1]s is the path.
	ways := map[string]string{
		"redirect":   `echo pwned > %[1]s`,
		"append":     `echo pwned >> %[1]s`,
		"touch":      `touch %[1]s`,
		"cp":         `cp /etc/group %[1]s`,
		"mkdir":      `mkdir %[1]s`,
		"mkdir -p":   `mkdir -p %[1]s/sub`,
		"ln -s":      `ln -s /etc/hostname %[1]s`,
		"mv":         `echo x > /tmp/f && mv /tmp/f %[1]s`,
		"tee":        `echo pwned | tee %[1]s`,
		"python":     `python3 -c "open('%[1]s', 'w').write('pwned')"`,
		"node":       `node -e "require('fs').writeFileSync('%[1]s', 'pwned')"`,
		"sed -i":     `sed -i s/a/b/ /etc/passwd %[1]s`,
		"dd":         `dd if=/dev/zero of=%[1]s count=1`,
		"git config": `HOME=$(dirname %[1]s) git config --global user.name pwned`,
		"remove":     `rm -rf %[1]s`,
	}
	// existing are removed (with the folders' contents).
	existing := []string{"/etc/passwd", "/etc", "/usr/bin/env", "/bin", "/var/tmp", "/opt", Home, "/home", "/root", "/run", "/dev/null"}
	for name, b := range linuxBackends(t) {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			// One command per way, each place in turn; a line per write
			// tells its exit code and error.
			for way, tmpl := range ways {
				var script strings.Builder
				targets := places
				if way == "remove" {
					targets = existing
				}
				for _, p := range targets {
					if p == "/etc/passwd" && (strings.HasPrefix(way, "mkdir") || way == "ln -s") {
						continue // exists: EEXIST comes first
					}
					fmt.Fprintf(&script, "( %s ) 2>&1 | head -c 400 | tr '\\n' ' '; echo \" [%s] status=${PIPESTATUS[0]}\"\n", fmt.Sprintf(tmpl, p), p)
				}
				o, err := b.Run(context.Background(), Spec{Argv: []string{"bash", "-c", script.String()}, Root: e.ws})
				if err != nil {
					t.Fatal(err)
				}
				for _, line := range strings.Split(strings.TrimSpace(string(o.Stdout)), "\n") {
					p := line[strings.LastIndex(line, "[")+1 : strings.LastIndex(line, "]")]
					switch {
					case strings.HasSuffix(line, "status=0"):
						t.Errorf("%s %s: the write succeeded: %s", way, p, line)
					case !strings.Contains(strings.ToLower(line), "read-only file system"):
						t.Errorf("%s %s: not EROFS: %s", way, p, line)
					}
				}
				if n := strings.Count(script.String(), "\n"); strings.Count(string(o.Stdout), "\n") != n {
					t.Errorf("%s: %d lines for %d writes:\n%s\n%s", way, strings.Count(string(o.Stdout), "\n"), n, o.Stdout, o.Stderr)
				}
			}
		})
	}
}

// TestWritablePlaces: the workspace, /tmp, /dev/shm, /dev/null, a
// writable spec path and the tools' cache folders take writes.
func TestWritablePlaces(t *testing.T) {
	for name, b := range linuxBackends(t) {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			extra := filepath.Join(e.parent, "extra")
			must(t, os.Mkdir(extra, 0o755))
			cmd := strings.Join([]string{
				"echo ws > f", "mkdir -p d/e && ln -s f d/l && mv d/l d/m", "echo t > /tmp/t", "mkdir -p /tmp/a/b",
				"echo s > /dev/shm/s", "echo n > /dev/null", "echo z > /dev/zero", "head -c 1 /dev/urandom > /dev/null",
				"echo x > " + extra + "/x",
				`for v in XDG_CACHE_HOME GOCACHE GOPATH GOMODCACHE npm_config_cache YARN_CACHE_FOLDER BUN_INSTALL_CACHE_DIR PIP_CACHE_DIR CARGO_HOME GRADLE_USER_HOME; do d=$(printenv $v) && mkdir -p "$d" && touch "$d/probe" || exit 1; done`,
				"echo ok",
			}, " && ")
			o, err := b.Run(context.Background(), Spec{Shell: cmd, Root: e.ws, Writable: []string{extra}})
			if err != nil {
				t.Fatal(err)
			}
			if o.ExitCode != 0 || strings.TrimSpace(string(o.Stdout)) != "ok" {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", o.ExitCode, o.Stdout, o.Stderr)
			}
			if b, err := os.ReadFile(filepath.Join(extra, "x")); err != nil || string(b) != "x\n" {
				t.Fatalf("writable path: %q %v", b, err)
			}
		})
	}
}

// TestToolsWork: with a read-only home, the usual tools still work in the
// workspace: their caches go to CacheDir.
func TestToolsWork(t *testing.T) {
	cases := []struct{ name, cmd, want string }{
		{"go build", "printf 'module m\\ngo 1.21\\n' > go.mod && printf 'package main\\nfunc main() { println(\"built\") }\\n' > main.go && go build -o app . && ./app 2>&1 && go vet . && go env GOCACHE", "built\n" + CacheDir + "/go-build\n"},
		{"npm", "npm --version >/dev/null && npm init -y >/dev/null && npm ls >/dev/null && npm config get cache", CacheDir + "/npm\n"},
		{"pip", "pip --version >/dev/null && python3 -m pip list 2>/dev/null | grep -c '^pip ' && python3 -m pip cache dir", "1\n" + CacheDir + "/pip\n"},
		{"git", "git init -q . && echo a > a && git add a && git -c user.name=n -c user.email=e@x commit -qm one && echo b > a && git status --short && git diff --stat && git log --format=%s", " M a\n a | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\none\n"},
	}
	for name, b := range linuxBackends(t) {
		for _, c := range cases {
			t.Run(name+"/"+c.name, func(t *testing.T) {
				e := newEnv(t)
				o, err := b.Run(context.Background(), Spec{Shell: c.cmd, Root: e.ws, Limits: Limits{Wall: 5 * time.Minute}})
				if err != nil {
					t.Fatal(err)
				}
				if o.ExitCode != 0 || string(o.Stdout) != c.want {
					t.Fatalf("exit %d\nstdout: %q\nwant:   %q\nstderr: %s", o.ExitCode, o.Stdout, c.want, o.Stderr)
				}
			})
		}
	}
}
