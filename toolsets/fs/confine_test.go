package fs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/tool"
)

// TestConfigPathsReadOnly: every agent, editor, git and shell config path of
// the policy's list is read-only to the tools, as a file at the top, as a
// folder in a nested project and as something new: writing, editing,
// patching, moving onto or away and deleting are refused with
// permission_denied, the disk stays as it was, and reading still works.
func TestConfigPathsReadOnly(t *testing.T) {
	for _, c := range policy.ConfigPaths() {
		t.Run(c.Name, func(t *testing.T) {
			e := newEnv(t, Options{})
			mustWrite(t, filepath.Join(e.ws, "notes.txt"), "notes\n")
			mustWrite(t, filepath.Join(e.ws, c.Name), "a\n")
			nested := "pkg/" + c.Name
			mustWrite(t, filepath.Join(e.ws, nested, "inner.md"), "a\n")
			edit := []any{map[string]any{"old_string": "a", "new_string": "b"}}
			before := snapshot(t, e.parent)
			for _, call := range []struct {
				tool string
				args map[string]any
			}{
				{"write_file", map[string]any{"path": c.Name, "content": "x"}},
				{"write_file", map[string]any{"path": strings.ToUpper(c.Name), "content": "x"}},
				{"write_file", map[string]any{"path": nested + "/inner.md", "content": "x"}},
				{"write_file", map[string]any{"path": "new/" + c.Name + "/settings.json", "content": "x"}},
				{"edit_file", map[string]any{"path": c.Name, "edits": edit}},
				{"edit_file", map[string]any{"path": nested + "/inner.md", "edits": edit}},
				{"apply_patch", map[string]any{"patch": "*** Begin Patch\n*** Add File: other/" + c.Name + "/x.md\n+x\n*** End Patch"}},
				{"apply_patch", map[string]any{"patch": "*** Begin Patch\n*** Update File: " + c.Name + "\n@@\n-a\n+b\n*** End Patch"}},
				{"move_file", map[string]any{"source": c.Name, "destination": "moved.txt"}},
				{"move_file", map[string]any{"source": "notes.txt", "destination": c.Name, "overwrite": true}},
				{"move_file", map[string]any{"source": nested, "destination": "pkg/moved"}},
				{"delete_file", map[string]any{"path": c.Name}},
				{"delete_file", map[string]any{"path": nested, "recursive": true}},
				{"create_directory", map[string]any{"path": "made/" + c.Name}},
			} {
				_, err := e.call(call.tool, call.args)
				if err == nil || err.Type != tool.PermissionDenied {
					t.Errorf("%s %v: want permission_denied, got %v", call.tool, call.args, err)
					continue
				}
				if !strings.Contains(err.Message, "protected path") || err.Suggestion == "" {
					t.Errorf("%s: the error does not say why: %s", call.tool, err.Text())
				}
			}
			if after := snapshot(t, e.parent); after != before {
				t.Fatalf("refused calls changed the disk:\n%s\n---\n%s", before, after)
			}
			if c.Name == ".toolgate" || c.Name == ".envrc" || c.Name == ".npmrc" {
				return // also read-protected: toolgate's own files, and secrets
			}
			for _, p := range []string{c.Name, nested + "/inner.md"} {
				if _, err := e.call("read_file", map[string]any{"path": p}); err != nil {
					t.Errorf("reading %s: %s", p, err.Text())
				}
			}
		})
	}
}

// TestGlobConfinement: a glob (search_files' glob, or its pattern with
// target=files) that names a place outside the searched folder is refused
// with invalid_arguments naming the argument, whatever the spelling; plain
// globs work, and an absolute one inside the searched folder is made
// relative.
func TestGlobConfinement(t *testing.T) {
	e := newEnv(t, Options{})
	for _, f := range []string{"src/a.go", "src/b_test.go", "docs/x.md", "a..b.go"} {
		mustWrite(t, filepath.Join(e.ws, f), "package x\n")
	}
	mustWrite(t, filepath.Join(e.parent, "outside", "o.go"), "package OUTSIDE-SECRET\n")
	bad := []string{
		"..", "../*", "../outside/*", "../**", "src/../../*", "**/../secret.txt", "src/**/../../**",
		"./../x", "src/..", "**/..", "a/b/../../../x",
		"{a,../b}", "{*.go,../**}", "x/{y,{z,../..}}/*", ".{.,}/x", "{.,..}/*", "src/{.,..}/{.,..}/*",
		`..\secret.txt`, `src\..\..\x`, `\.\./x`, `.\./x`, `[.][.]/x`, `.[.]/*`, `[.].`, `**/[!a][.]/*`,
		"/etc/*", "/etc/**/passwd", "/", "/**", "//etc/*", "$WS_PARENT/outside/*", "$WS_PARENT/**", "$WS/../outside/*",
		"{/etc/*,*.go}", `\etc\*`, `C:\Windows\*`, "c:/x/*", "C:", "file:///etc/*",
		"~", "~/.ssh/*", "~root/*", "$HOME/*", "${HOME}/*", "$HOME", "%USERPROFILE%/*",
	}
	for _, arg := range []string{"glob", "pattern"} {
		for _, g := range bad {
			t.Run(arg+" "+g, func(t *testing.T) {
				args := map[string]any{"pattern": "package", "glob": e.expand(g)}
				if arg == "pattern" {
					args = map[string]any{"pattern": e.expand(g), "target": "files"}
				}
				res, err := e.call("search_files", args)
				if err == nil {
					t.Fatalf("accepted: %s", res.Text())
				}
				if err.Type != tool.InvalidArguments || err.Details["argument"] != arg || !strings.HasPrefix(err.Message, arg+" ") || err.Suggestion == "" {
					t.Fatalf("want invalid_arguments naming %s: %s %v", arg, err.Text(), err.Details)
				}
			})
		}
	}
	// An absolute glob inside a root but outside the searched folder.
	if _, err := e.call("search_files", map[string]any{"pattern": "package", "path": "src", "glob": e.ws + "/docs/*.md"}); err == nil || err.Type != tool.InvalidArguments || !strings.Contains(err.Message, "outside the searched folder") {
		t.Errorf("a glob outside the searched folder: %v", err)
	}
	for _, ok := range []struct{ path, glob, want string }{
		{".", "*.go", "a..b.go\nsrc/a.go\nsrc/b_test.go"},
		{".", "src/*.go", "src/a.go\nsrc/b_test.go"},
		{".", "./src/*_test.go", "src/b_test.go"},
		{".", "$WS/src/*_test.go", "src/b_test.go"},
		{"src", "$WS/src/a.go", "src/a.go"},
		{".", "**/*.{go,md}", "a..b.go\ndocs/x.md\nsrc/a.go\nsrc/b_test.go"},
		{".", "a..b.go", "a..b.go"},
		{".", "~$lock.docx", ""},
		{".", "...", ""},
	} {
		for _, arg := range []string{"glob", "pattern"} {
			args := map[string]any{"pattern": "package", "path": ok.path, "glob": e.expand(ok.glob), "output": "files"}
			if arg == "pattern" {
				args = map[string]any{"pattern": e.expand(ok.glob), "path": ok.path, "target": "files"}
			}
			res, err := e.call("search_files", args)
			if err != nil {
				t.Errorf("%s %q: %s", arg, ok.glob, err.Text())
				continue
			}
			got := res.Text()
			if strings.HasPrefix(got, "No matches") {
				got = ""
			}
			if got != ok.want {
				t.Errorf("%s %q in %s: got\n%s\nwant\n%s", arg, ok.glob, ok.path, got, ok.want)
			}
		}
	}
}

// TestBraceAlternatives checks the expansion the glob check relies on.
func TestBraceAlternatives(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"a", "a"},
		{"{a,b}", "a|b"},
		{"x{a,b}y{1,2}", "xay1|xay2|xby1|xby2"},
		{"{a,{b,c}}", "a|b|c"},
		{`\{a,b}`, `\{a,b}`},
		{"[{]a,b}", "[{]a,b}"},
		{"{a,b", "{a,b"},
		{"{,x}", "|x"},
	} {
		got, ok := braceAlternatives(tc.in, 100, maxGlobExpansion)
		if !ok || strings.Join(got, "|") != tc.want {
			t.Errorf("%q: %q %v, want %q", tc.in, got, ok, tc.want)
		}
	}
	if _, ok := braceAlternatives(strings.Repeat("{a,b}", 11), maxGlobAlternatives, maxGlobExpansion); ok {
		t.Error("2^11 alternatives were expanded")
	}
	if _, ok := braceAlternatives(strings.Repeat("x", 4000)+strings.Repeat("{a,b}", 8), maxGlobAlternatives, maxGlobExpansion); ok {
		t.Error("256 alternatives of 4 KB were expanded past the byte budget")
	}
}

// TestSymlinkChains: a path through up to MaxLinks symbolic links works
// for every tool; one through more (a long chain inside the root, or a
// loop) is refused with an ELOOP invalid_arguments error that names the
// path, and nothing changes on disk. search_files skips such links.
func TestSymlinkChains(t *testing.T) {
	// chain makes name -> name1 -> … -> target: n links in all.
	chain := func(t *testing.T, dir, name, target string, n int) {
		for i := n - 1; i >= 0; i-- {
			from, to := name, target
			if i > 0 {
				from = fmt.Sprintf("%s%d", name, i)
			}
			if i < n-1 {
				to = fmt.Sprintf("%s%d", name, i+1)
			}
			if err := os.Symlink(to, filepath.Join(dir, from)); err != nil {
				t.Fatal(err)
			}
		}
	}
	edit := []any{map[string]any{"old_string": "hello", "new_string": "bye"}}
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"read_file", map[string]any{"path": "f"}},
		{"get_file_info", map[string]any{"path": "f"}},
		{"write_file", map[string]any{"path": "f", "content": "x"}},
		{"edit_file", map[string]any{"path": "f", "edits": edit}},
		{"apply_patch", map[string]any{"patch": "*** Begin Patch\n*** Update File: d/t.txt\n@@\n-hello\n+bye\n*** End Patch"}},
		{"list_directory", map[string]any{"path": "d"}},
		{"search_files", map[string]any{"pattern": "hello", "path": "d"}},
		{"create_directory", map[string]any{"path": "d/new"}},
		{"write_file", map[string]any{"path": "d/new.txt", "content": "x"}},
		{"move_file", map[string]any{"source": "d/t.txt", "destination": "moved.txt"}},
		{"delete_file", map[string]any{"path": "d/t.txt"}},
	}
	for _, n := range []int{1, 2, 7, MaxLinks, MaxLinks + 1, MaxLinks + 2, 20, 40} {
		for _, c := range calls {
			t.Run(fmt.Sprintf("%d hops %s %v", n, c.tool, c.args), func(t *testing.T) {
				e := newEnv(t, Options{})
				mustWrite(t, filepath.Join(e.ws, "real", "t.txt"), "hello\n")
				chain(t, e.ws, "f", "real/t.txt", n)
				chain(t, e.ws, "d", "real", n)
				before := snapshot(t, e.parent)
				res, err := e.call(c.tool, c.args)
				if n <= MaxLinks {
					if err != nil {
						t.Fatalf("%d links: %s", n, err.Text())
					}
					return
				}
				if err == nil {
					t.Fatalf("%d links: accepted: %s", n, res.Text())
				}
				if err.Type != tool.InvalidArguments || err.Details["errno"] != "ELOOP" || !strings.Contains(err.Message, "ELOOP") || err.Details["path"] == "" {
					t.Fatalf("want an ELOOP invalid_arguments: %s %v", err.Text(), err.Details)
				}
				if after := snapshot(t, e.parent); after != before {
					t.Fatal("a refused call changed the disk")
				}
			})
		}
	}
	t.Run("loops", func(t *testing.T) {
		e := newEnv(t, Options{})
		os.Symlink("b", filepath.Join(e.ws, "a"))
		os.Symlink("a", filepath.Join(e.ws, "b"))
		os.Symlink("self", filepath.Join(e.ws, "self"))
		os.Symlink("up/x", filepath.Join(e.ws, "up")) // loops through itself as a folder
		for _, p := range []string{"a", "b", "self", "a/x", "up", "up/y"} {
			for _, call := range []struct {
				tool string
				args map[string]any
			}{
				{"read_file", map[string]any{"path": p}},
				{"write_file", map[string]any{"path": p, "content": "x"}},
				{"list_directory", map[string]any{"path": p}},
				{"get_file_info", map[string]any{"path": p}},
			} {
				_, err := e.call(call.tool, call.args)
				if err == nil || err.Type != tool.InvalidArguments || err.Details["errno"] != "ELOOP" || !strings.Contains(err.Message, p) {
					t.Errorf("%s %s: want ELOOP naming the path, got %v", call.tool, p, err)
				}
			}
		}
		// The links themselves can still be removed, and a search skips them.
		for _, args := range []map[string]any{{"pattern": "x"}, {"pattern": "*", "target": "files"}} {
			if _, err := e.call("search_files", args); err != nil {
				t.Fatal(err.Text())
			}
		}
		if _, err := e.call("delete_file", map[string]any{"path": "self"}); err != nil {
			t.Fatal(err.Text())
		}
	})
	t.Run("search skips long chains", func(t *testing.T) {
		e := newEnv(t, Options{})
		mustWrite(t, filepath.Join(e.ws, "real.txt"), "needle\n")
		chain(t, e.ws, "long", "real.txt", MaxLinks+1)
		res, err := e.call("search_files", map[string]any{"pattern": "needle"})
		if err != nil || strings.Contains(res.Text(), "long:") || !strings.Contains(res.Text(), "long1:1:needle") || !strings.Contains(res.Text(), "real.txt:1:needle") {
			t.Fatalf("%v\n%s", err, res.Text())
		}
		res, err = e.call("search_files", map[string]any{"pattern": "long*", "target": "files"})
		if err != nil || strings.Contains(res.Text(), "long\n") || !strings.Contains(res.Text(), "long8") {
			t.Fatalf("%v\n%s", err, res.Text())
		}
	})
}

// TestHardLinks: a regular file with other hard links — here a second name
// of a file outside the root, or of another file inside — is neither read
// nor changed by default, and get_file_info and search_files do not read
// it either; its name is still listed. Options.AllowHardLinks lifts it.
func TestHardLinks(t *testing.T) {
	setup := func(t *testing.T, opts Options) *env {
		e := newEnv(t, opts)
		if err := os.Link(filepath.Join(e.parent, "outside", "secret.txt"), filepath.Join(e.ws, "hl")); err != nil {
			t.Fatal(err)
		}
		mustWrite(t, filepath.Join(e.ws, "in1.txt"), "OUTSIDE-SECRET twin\n")
		if err := os.Link(filepath.Join(e.ws, "in1.txt"), filepath.Join(e.ws, "in2.txt")); err != nil {
			t.Fatal(err)
		}
		mustWrite(t, filepath.Join(e.ws, "plain.txt"), "plain\n")
		return e
	}
	edit := []any{map[string]any{"old_string": "OUTSIDE", "new_string": "PWNED"}}
	e := setup(t, Options{})
	before := snapshot(t, e.parent)
	for _, name := range []string{"hl", "in1.txt", "in2.txt"} {
		for _, call := range []struct {
			tool string
			args map[string]any
		}{
			{"read_file", map[string]any{"path": name}},
			{"edit_file", map[string]any{"path": name, "edits": edit}},
			{"edit_file", map[string]any{"path": name, "edits": edit, "dry_run": true}},
			{"write_file", map[string]any{"path": name, "content": "x"}},
			{"apply_patch", map[string]any{"patch": "*** Begin Patch\n*** Update File: " + name + "\n@@\n-OUTSIDE-SECRET\n+x\n*** End Patch"}},
		} {
			res, err := e.call(call.tool, call.args)
			if err == nil || err.Type != tool.PermissionDenied || err.Details["links"] == nil ||
				!strings.Contains(err.Message, "hard links") || !strings.Contains(err.Suggestion, "files.allow_hard_links") {
				t.Errorf("%s %s: want permission_denied about hard links, got %v", call.tool, name, err)
			}
			if strings.Contains(res.Text(), "OUTSIDE-SECRET") {
				t.Errorf("%s %s shows the content", call.tool, name)
			}
		}
	}
	if after := snapshot(t, e.parent); after != before {
		t.Fatal("refused calls changed the disk")
	}
	res, err := e.call("get_file_info", map[string]any{"path": "hl"})
	if err != nil {
		t.Fatal(err.Text())
	}
	if info := res.Structured.(FileInfo); info.Links != 2 || info.Lines != nil || info.Binary != nil || info.MIME != "" || !strings.Contains(res.Text(), "not read") {
		t.Errorf("get_file_info read a hard-linked file: %s", res.Text())
	}
	res, err = e.call("search_files", map[string]any{"pattern": "OUTSIDE|plain"})
	if err != nil || res.Text() != "plain.txt:1:plain\n(3 file(s) with other hard links not searched: they may be second names of files outside the workspace; the policy setting files.allow_hard_links lets the tools read them)" || res.Meta["skipped_hard_linked"] != 3 {
		t.Errorf("search: %v\n%s", err, res.Text())
	}
	res, err = e.call("search_files", map[string]any{"pattern": "*", "target": "files"})
	if err != nil || res.Text() != "hl\nin1.txt\nin2.txt\nplain.txt" {
		t.Errorf("finding names: %v\n%s", err, res.Text())
	}
	res, err = e.call("list_directory", map[string]any{})
	if err != nil || !strings.Contains(res.Text(), "hl") {
		t.Errorf("listing: %v\n%s", err, res.Text())
	}
	// Moving and deleting a name touch no content.
	if _, err := e.call("move_file", map[string]any{"source": "in2.txt", "destination": "in3.txt"}); err != nil {
		t.Error(err.Text())
	}
	if _, err := e.call("delete_file", map[string]any{"path": "hl"}); err != nil {
		t.Error(err.Text())
	}
	if b, _ := os.ReadFile(filepath.Join(e.parent, "outside", "secret.txt")); string(b) != "OUTSIDE-SECRET\n" {
		t.Errorf("the outside file changed: %q", b)
	}

	e = setup(t, Options{AllowHardLinks: true})
	if res, err := e.call("read_file", map[string]any{"path": "in2.txt"}); err != nil || !strings.Contains(res.Text(), "twin") {
		t.Errorf("allowed read: %v %s", err, res.Text())
	}
	if res, err := e.call("search_files", map[string]any{"pattern": "twin"}); err != nil || res.Text() != "in1.txt:1:OUTSIDE-SECRET twin\nin2.txt:1:OUTSIDE-SECRET twin" {
		t.Errorf("allowed search: %v %s", err, res.Text())
	}
	if _, err := e.call("edit_file", map[string]any{"path": "in1.txt", "edits": []any{map[string]any{"old_string": "twin", "new_string": "one"}}}); err != nil {
		t.Errorf("allowed edit: %s", err.Text())
	}
}

// TestGuardLiteral: the literal a rule's paths must hold never hides a
// match: with and without it, the default rules decide alike.
func TestGuardLiteral(t *testing.T) {
	g, err := newGuard(DefaultRules(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, c := range policy.ConfigPaths() {
		paths = append(paths, c.Name, "a/"+c.Name+"/b", strings.ToUpper(c.Name)+"x", "x"+c.Name)
	}
	for _, c := range policy.CIPaths() {
		paths = append(paths, c.Pattern, "a/"+c.Pattern+"/b", strings.ToUpper(c.Pattern)+"x", "x"+c.Pattern)
	}
	paths = append(paths, ".git/hooks/x", ".env.local", "a/.ssh/id", "k.PEM", "x.toolgate-1", "toolgate.yaml", "a.audit.jsonl", "src/main.go", ".toolgate/spill/r1", "w.code-workspace")
	for _, p := range paths {
		for _, acc := range []Access{Read, Write} {
			low := strings.ToLower(p)
			var want *Rule
			for i := range g.rules {
				r := &g.rules[i]
				if !r.Ask && r.Access&acc != 0 && (doublestar.MatchUnvalidated(r.Pattern, low) || doublestar.MatchUnvalidated(r.dir, low)) && !excepted(r, low) {
					want = &r.Rule
					break
				}
			}
			if got := g.match(p, acc); got != want {
				t.Errorf("%s (%d): literal filter gives %v, glob alone %v", p, acc, got, want)
			}
			var wantAsk *Rule
			for i := range g.rules {
				r := &g.rules[i]
				if r.Ask && (doublestar.MatchUnvalidated(r.Pattern, low) || doublestar.MatchUnvalidated(r.dir, low)) {
					wantAsk = &r.Rule
					break
				}
			}
			if got := g.asked(p); got != wantAsk {
				t.Errorf("%s: asked with the literal filter gives %v, glob alone %v", p, got, wantAsk)
			}
		}
	}
}
