//go:build unix

package fs

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/toolgate/toolgate/tool"
)

// TestHostile is a wider table of hostile calls than the shared corpus
// (its held-out cousins): each must be denied with a structured error and
// leave the whole tree unchanged; the controls must succeed.
func TestHostile(t *testing.T) {
	type tc struct {
		name  string
		tool  string
		args  map[string]any
		setup func(e *env)
		allow bool
		want  tool.ErrorType // "" accepts any denial type
	}
	link := func(target, name string) func(e *env) {
		return func(e *env) {
			if err := os.Symlink(target, filepath.Join(e.ws, name)); err != nil {
				panic(err)
			}
		}
	}
	cases := []tc{
		// Escapes.
		{name: "dotdot after real dir", tool: "write_file", args: map[string]any{"path": "src/../../x.txt", "content": "x"}, want: tool.PermissionDenied},
		{name: "absolute outside", tool: "read_file", args: map[string]any{"path": "$WS_PARENT/outside/secret.txt"}, want: tool.PermissionDenied},
		{name: "absolute sibling with root as string prefix", tool: "read_file", args: map[string]any{"path": "$WS_PARENT/ws-evil/x.txt"}, setup: func(e *env) { mustWrite(t, e.parent+"/ws-evil/x.txt", "OUTSIDE-SECRET") }, want: tool.PermissionDenied},
		{name: "absolute in root then dotdot out", tool: "read_file", args: map[string]any{"path": "$WS/../secret.txt"}, want: tool.PermissionDenied},
		{name: "proc root", tool: "read_file", args: map[string]any{"path": "/proc/self/root/etc/passwd"}, want: tool.PermissionDenied},
		{name: "relative link out", tool: "read_file", args: map[string]any{"path": "up/outside/secret.txt"}, setup: link("..", "up"), want: tool.PermissionDenied},
		{name: "link chain out", tool: "read_file", args: map[string]any{"path": "l1/secret.txt"}, setup: func(e *env) { link("l2", "l1")(e); link("../outside", "l2")(e) }, want: tool.PermissionDenied},
		{name: "write through dir link out", tool: "write_file", args: map[string]any{"path": "o/new.txt", "content": "x"}, setup: link("../outside", "o"), want: tool.PermissionDenied},
		{name: "write to dangling link out", tool: "write_file", args: map[string]any{"path": "d", "content": "x"}, setup: link("../outside/new.txt", "d"), want: tool.PermissionDenied},
		{name: "mkdir through link out", tool: "create_directory", args: map[string]any{"path": "o/newdir"}, setup: link("../outside", "o"), want: tool.PermissionDenied},
		{name: "move into link out", tool: "move_file", args: map[string]any{"source": "README.md", "destination": "o/README.md"}, setup: link("../outside", "o"), want: tool.PermissionDenied},
		{name: "move from outside abs", tool: "move_file", args: map[string]any{"source": "$WS_PARENT/outside/secret.txt", "destination": "s.txt"}, want: tool.PermissionDenied},
		{name: "delete root", tool: "delete_file", args: map[string]any{"path": ".", "recursive": true}, want: tool.PermissionDenied},
		{name: "delete root abs", tool: "delete_file", args: map[string]any{"path": "$WS", "recursive": true}, want: tool.PermissionDenied},
		{name: "delete root via dotdot", tool: "delete_file", args: map[string]any{"path": "src/..", "recursive": true}, want: tool.PermissionDenied},
		{name: "list outside", tool: "list_directory", args: map[string]any{"path": ".."}, want: tool.PermissionDenied},
		{name: "info device", tool: "get_file_info", args: map[string]any{"path": "/dev/null"}, want: tool.PermissionDenied},
		// Malformed paths.
		{name: "NUL", tool: "read_file", args: map[string]any{"path": "README.md\x00.txt"}, want: tool.InvalidArguments},
		{name: "newline", tool: "write_file", args: map[string]any{"path": "a\nb.txt", "content": "x"}, want: tool.InvalidArguments},
		{name: "zero width", tool: "write_file", args: map[string]any{"path": "re\u200badme.md", "content": "x"}, want: tool.InvalidArguments},
		{name: "bidi isolate", tool: "write_file", args: map[string]any{"path": "x\u2067y.txt", "content": "x"}, want: tool.InvalidArguments},
		{name: "long path", tool: "read_file", args: map[string]any{"path": strings.Repeat("a/", 2100)}, want: tool.InvalidArguments},
		{name: "long name", tool: "write_file", args: map[string]any{"path": strings.Repeat("n", 256), "content": "x"}, want: tool.InvalidArguments},
		{name: "leading space kept", tool: "read_file", args: map[string]any{"path": " README.md"}, want: tool.NotFound},
		{name: "url encoded", tool: "read_file", args: map[string]any{"path": "%2e%2e/secret.txt"}, want: tool.NotFound},
		{name: "unknown parameter", tool: "read_file", args: map[string]any{"path": "README.md", "follow": true}, want: tool.InvalidArguments},
		{name: "wrong type", tool: "read_file", args: map[string]any{"path": 5}, want: tool.InvalidArguments},
		// Protected paths.
		{name: "git hooks case", tool: "write_file", args: map[string]any{"path": ".GIT/hooks/pre-push", "content": "x"}, want: tool.PermissionDenied},
		{name: "nested git config read", tool: "read_file", args: map[string]any{"path": "sub/.git/config"}, setup: func(e *env) { mustWrite(t, e.ws+"/sub/.git/config", "[core]") }, want: tool.PermissionDenied},
		{name: "git file gitdir", tool: "write_file", args: map[string]any{"path": "sub/.git", "content": "gitdir: /tmp/evil"}, want: tool.PermissionDenied},
		{name: "link to hooks", tool: "write_file", args: map[string]any{"path": "h/pre-commit", "content": "x"}, setup: link(".git/hooks", "h"), want: tool.PermissionDenied},
		{name: "dotdot into hooks", tool: "write_file", args: map[string]any{"path": "src/../.git/hooks/post-merge", "content": "x"}, want: tool.PermissionDenied},
		{name: "env", tool: "read_file", args: map[string]any{"path": ".env"}, setup: func(e *env) { mustWrite(t, e.ws+"/.env", "TOKEN=1") }, want: tool.PermissionDenied},
		{name: "env via link", tool: "read_file", args: map[string]any{"path": "cfg"}, setup: func(e *env) { mustWrite(t, e.ws+"/.env.local", "TOKEN=1"); link(".env.local", "cfg")(e) }, want: tool.PermissionDenied},
		{name: "pem", tool: "read_file", args: map[string]any{"path": "certs/server.PEM"}, setup: func(e *env) { mustWrite(t, e.ws+"/certs/server.PEM", "key") }, want: tool.PermissionDenied},
		{name: "ssh key", tool: "get_file_info", args: map[string]any{"path": "keys/id_ed25519"}, setup: func(e *env) { mustWrite(t, e.ws+"/keys/id_ed25519", "key") }, want: tool.PermissionDenied},
		{name: "zshrc", tool: "edit_file", args: map[string]any{"path": ".zshrc", "edits": []any{map[string]any{"old_string": "a", "new_string": "b"}}}, setup: func(e *env) { mustWrite(t, e.ws+"/.zshrc", "a") }, want: tool.PermissionDenied},
		{name: "mcp json", tool: "write_file", args: map[string]any{"path": ".mcp.json", "content": "{}"}, want: tool.PermissionDenied},
		{name: "toolgate dir", tool: "write_file", args: map[string]any{"path": ".toolgate/policy.yaml", "content": "x"}, want: tool.PermissionDenied},
		{name: "claude settings", tool: "write_file", args: map[string]any{"path": ".claude/settings.json", "content": "{}"}, want: tool.PermissionDenied},
		{name: "move onto hooks", tool: "move_file", args: map[string]any{"source": "README.md", "destination": ".git/hooks/pre-commit"}, want: tool.PermissionDenied},
		{name: "move dir holding hooks", tool: "move_file", args: map[string]any{"source": "evil", "destination": ".git"}, setup: func(e *env) { os.RemoveAll(e.ws + "/.git"); mustWrite(t, e.ws+"/evil/hooks/pre-commit", "x") }, want: tool.PermissionDenied},
		{name: "move protected out", tool: "move_file", args: map[string]any{"source": ".git/config", "destination": "c"}, want: tool.PermissionDenied},
		{name: "delete dir holding git", tool: "delete_file", args: map[string]any{"path": "proj", "recursive": true}, setup: func(e *env) { mustWrite(t, e.ws+"/proj/.git/HEAD", "x") }, want: tool.PermissionDenied},
		{name: "delete git", tool: "delete_file", args: map[string]any{"path": ".git", "recursive": true}, want: tool.PermissionDenied},
		{name: "list hooks", tool: "list_directory", args: map[string]any{"path": ".git/hooks"}, want: tool.PermissionDenied},
		// Special files and links.
		{name: "fifo read", tool: "read_file", args: map[string]any{"path": "fifo"}, setup: func(e *env) { syscall.Mkfifo(e.ws+"/fifo", 0o644) }, want: tool.PermissionDenied},
		{name: "fifo edit", tool: "edit_file", args: map[string]any{"path": "fifo", "edits": []any{map[string]any{"old_string": "a", "new_string": "b"}}}, setup: func(e *env) { syscall.Mkfifo(e.ws+"/fifo", 0o644) }, want: tool.PermissionDenied},
		{name: "fifo write", tool: "write_file", args: map[string]any{"path": "fifo", "content": "x"}, setup: func(e *env) { syscall.Mkfifo(e.ws+"/fifo", 0o644) }, want: tool.PermissionDenied},
		{name: "hardlink edit", tool: "edit_file", args: map[string]any{"path": "hl", "edits": []any{map[string]any{"old_string": "OUTSIDE", "new_string": "x"}}}, setup: func(e *env) { os.Link(e.parent+"/outside/secret.txt", e.ws+"/hl") }, want: tool.PermissionDenied},
		{name: "write a folder", tool: "write_file", args: map[string]any{"path": "src", "content": "x"}},
		{name: "overwrite without asking", tool: "move_file", args: map[string]any{"source": "README.md", "destination": "src/main.go"}, want: tool.Conflict},
		{name: "non-empty dir without recursive", tool: "delete_file", args: map[string]any{"path": "src"}, want: tool.Conflict},
		{name: "ambiguous edit", tool: "edit_file", args: map[string]any{"path": "dup.txt", "edits": []any{map[string]any{"old_string": "x", "new_string": "y"}}}, setup: func(e *env) { mustWrite(t, e.ws+"/dup.txt", "x\nx\n") }, want: tool.InvalidArguments},
		{name: "second edit fails", tool: "edit_file", args: map[string]any{"path": "README.md", "edits": []any{map[string]any{"old_string": "Project", "new_string": "P"}, map[string]any{"old_string": "absent", "new_string": "y"}}}, want: tool.InvalidArguments},
		// Controls.
		{name: "absolute inside", tool: "read_file", args: map[string]any{"path": "$WS/README.md"}, allow: true},
		{name: "link inside", tool: "read_file", args: map[string]any{"path": "s/main.go"}, setup: link("src", "s"), allow: true},
		{name: "link up and back in", tool: "read_file", args: map[string]any{"path": "src/up/README.md"}, setup: link("..", "src/up"), allow: true},
		{name: "delete link to outside", tool: "delete_file", args: map[string]any{"path": "o"}, setup: link("../outside", "o"), allow: true},
		{name: "fifo described, not opened", tool: "get_file_info", args: map[string]any{"path": "fifo"}, setup: func(e *env) { syscall.Mkfifo(e.ws+"/fifo", 0o644) }, allow: true},
		{name: "git HEAD readable", tool: "read_file", args: map[string]any{"path": ".git/HEAD"}, allow: true},
		{name: "hardlink read", tool: "read_file", args: map[string]any{"path": "hl"}, setup: func(e *env) { os.Link(e.ws+"/README.md", e.ws+"/hl") }, want: tool.PermissionDenied},
		{name: "hardlink read outside", tool: "read_file", args: map[string]any{"path": "hl"}, setup: func(e *env) { os.Link(e.parent+"/outside/secret.txt", e.ws+"/hl") }, want: tool.PermissionDenied},
		{name: "unicode name", tool: "write_file", args: map[string]any{"path": "docs/résumé 1.md", "content": "x"}, allow: true},
		{name: "missing file", tool: "read_file", args: map[string]any{"path": "nope"}, want: tool.NotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, Options{})
			e.fixture(t)
			if c.setup != nil {
				c.setup(e)
			}
			args := e.expandAny(c.args).(map[string]any)
			before := snapshot(t, e.parent)
			res, err := e.call(c.tool, args)
			for _, m := range outsideMarkers {
				if strings.Contains(res.Text(), m) {
					t.Fatalf("result shows outside content: %s", res.Text())
				}
			}
			if c.allow {
				if err != nil {
					t.Fatalf("expected success, got %s", err.Text())
				}
				return
			}
			if err == nil {
				t.Fatalf("expected a denial, got success: %s", res.Text())
			}
			checkDenial(t, err)
			if c.want != "" && err.Type != c.want {
				t.Fatalf("denial type %s, want %s: %s", err.Type, c.want, err.Text())
			}
			if after := snapshot(t, e.parent); after != before {
				t.Fatalf("a denied call changed the disk:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// TestAllowSecrets lifts the secret rule for one glob, and only for it.
func TestAllowSecrets(t *testing.T) {
	e := newEnv(t, Options{AllowSecrets: []string{"**/.env.example"}})
	mustWrite(t, e.ws+"/.env.example", "TOKEN=\n")
	mustWrite(t, e.ws+"/.env", "TOKEN=1\n")
	if _, err := e.call("read_file", map[string]any{"path": ".env.example"}); err != nil {
		t.Fatal(err.Text())
	}
	if _, err := e.call("read_file", map[string]any{"path": ".env"}); err == nil || err.Type != tool.PermissionDenied {
		t.Fatalf(".env readable: %v", err)
	}
	if _, err := New(e.roots, Options{Rules: []Rule{{Pattern: "[", Reason: "bad"}}}); err == nil {
		t.Fatal("an invalid glob was accepted")
	}
}

// TestSubmoduleAndRipgrepConfigProtected: .gitmodules and .ripgreprc make
// programs act later (git on clone/update, rg on every search): writing
// them is refused, reading them is not.
func TestSubmoduleAndRipgrepConfigProtected(t *testing.T) {
	g, err := newGuard(DefaultRules(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{".gitmodules", "sub/.gitmodules", ".ripgreprc", ".GITMODULES"} {
		if g.match(p, Write) == nil {
			t.Errorf("writing %s is allowed", p)
		}
		if g.match(p, Read) != nil {
			t.Errorf("reading %s is denied", p)
		}
	}
}
