package fs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/tool"
)

// TestCIAskRules: a CI definition (policy.CIPaths, Ask rules) named by the
// call is written (the policy in front asked about that name), by every
// tool that changes files; reached without naming it — through a link to
// it or to a folder on its way, a ".." after a link, or inside a folder
// moved or deleted whole — it is refused and the disk is left unchanged.
func TestCIAskRules(t *testing.T) {
	for _, c := range policy.CIPaths() {
		name := strings.ReplaceAll(c.Pattern, "*", "release")
		t.Run(c.Pattern, func(t *testing.T) {
			e := newEnv(t, Options{})
			target := name + "/ci.yml" // a folder's entry
			if last := filepath.Base(name); strings.LastIndex(last, ".") > 0 || last == "Jenkinsfile" {
				target = name // a file's name
			}
			// Named: written, edited, patched, moved and deleted.
			if _, te := e.call("write_file", map[string]any{"path": target, "content": "a\n"}); te != nil {
				t.Fatalf("write_file %s: %v", target, te)
			}
			if _, te := e.call("edit_file", map[string]any{"path": target, "edits": []map[string]any{{"old_string": "a", "new_string": "b"}}}); te != nil {
				t.Fatalf("edit_file %s: %v", target, te)
			}
			if _, te := e.call("move_file", map[string]any{"source": target, "destination": "moved.yml"}); te != nil {
				t.Fatalf("move_file %s away: %v", target, te)
			}
			if _, te := e.call("move_file", map[string]any{"source": "moved.yml", "destination": "./" + target}); te != nil {
				t.Fatalf("move_file onto %s: %v", target, te)
			}

			// Reached through links: to the file itself, to the folder
			// holding it, and a ".." after a link.
			base := filepath.Base(target)
			os.Symlink(target, filepath.Join(e.ws, "file-alias"))
			os.MkdirAll(filepath.Join(e.ws, "a", "b"), 0o755)
			os.Symlink("a/b", filepath.Join(e.ws, "deep"))
			type call struct {
				tool string
				args map[string]any
			}
			calls := []call{
				{"write_file", map[string]any{"path": "file-alias", "content": "planted\n"}},
				{"edit_file", map[string]any{"path": "file-alias", "edits": []map[string]any{{"old_string": "b", "new_string": "c"}}}},
				{"write_file", map[string]any{"path": "deep/../../" + target, "content": "planted\n"}},
			}
			if target != name { // a folder: a link to it
				os.Symlink(name, filepath.Join(e.ws, "alias"))
				os.MkdirAll(filepath.Join(e.ws, filepath.FromSlash(name), "sub"), 0o755)
				calls = append(calls,
					call{"write_file", map[string]any{"path": "alias/" + base, "content": "planted\n"}},
					call{"write_file", map[string]any{"path": "alias/new.yml", "content": "planted\n"}},
					call{"write_file", map[string]any{"path": filepath.Join(e.ws, "alias", base), "content": "planted\n"}},
					call{"write_file", map[string]any{"path": "alias/sub/../" + base, "content": "planted\n"}},
					call{"create_directory", map[string]any{"path": "alias/made"}},
					call{"delete_file", map[string]any{"path": "alias/" + base}},
					call{"move_file", map[string]any{"source": "alias/" + base, "destination": "stolen.yml"}},
					call{"move_file", map[string]any{"source": "moved.yml", "destination": "alias/moved.yml"}},
					call{"apply_patch", map[string]any{"patch": "*** Begin Patch\n*** Add File: alias/p.yml\n+x\n*** End Patch\n"}},
				)
			}
			mustWrite(t, filepath.Join(e.ws, "moved.yml"), "m\n")
			before := snapshot(t, e.ws)
			for _, tc := range calls {
				_, te := e.call(tc.tool, tc.args)
				if te == nil || te.Type != tool.PermissionDenied || te.Details["rule"] != strings.ToLower("**/"+c.Pattern) {
					t.Errorf("%s %v: %v, want permission_denied by the CI rule", tc.tool, tc.args, te)
				}
			}
			if after := snapshot(t, e.ws); after != before {
				t.Errorf("the disk changed:\n%s\n---\n%s", before, after)
			}

			// A folder that holds it, moved or deleted whole.
			mustWrite(t, filepath.Join(e.ws, "incoming", filepath.FromSlash(target)), "x\n")
			before = snapshot(t, e.ws)
			for _, tc := range []struct {
				tool string
				args map[string]any
			}{
				{"move_file", map[string]any{"source": "incoming", "destination": "pkg"}},
				{"delete_file", map[string]any{"path": "incoming", "recursive": true}},
			} {
				if _, te := e.call(tc.tool, tc.args); te == nil || te.Type != tool.PermissionDenied || te.Details["rule"] != strings.ToLower("**/"+c.Pattern) {
					t.Errorf("%s %v: %v, want permission_denied by the CI rule", tc.tool, tc.args, te)
				}
			}
			if after := snapshot(t, e.ws); after != before {
				t.Errorf("the disk changed:\n%s\n---\n%s", before, after)
			}
			if _, te := e.call("delete_file", map[string]any{"path": target}); te != nil {
				t.Errorf("delete_file %s by name: %v", target, te)
			}
		})
	}
}

// TestCIAskAliases: a CI path at the top of the root that is a symbolic
// link (.github -> gh, .gitlab-ci.yml -> ci/gitlab.yml, in another letter
// case too) makes what it leads to a CI definition: writing, moving or
// deleting it by its other name is refused; the rest of that folder is not.
func TestCIAskAliases(t *testing.T) {
	e := newEnv(t, Options{})
	mustWrite(t, filepath.Join(e.ws, "gh", "workflows", "ci.yml"), "on: push\n")
	mustWrite(t, filepath.Join(e.ws, "ci", "gitlab.yml"), "test: {}\n")
	mustWrite(t, filepath.Join(e.ws, "ci", "notes.md"), "notes\n")
	os.Symlink("gh", filepath.Join(e.ws, ".GitHub"))
	os.Symlink("ci/gitlab.yml", filepath.Join(e.ws, ".gitlab-ci.yml"))
	before := snapshot(t, e.ws)
	for _, tc := range []struct {
		tool, rule string
		args       map[string]any
	}{
		{"write_file", "**/.github/workflows", map[string]any{"path": "gh/workflows/evil.yml", "content": "x"}},
		{"write_file", "**/.github/workflows", map[string]any{"path": "gh/workflows/ci.yml", "content": "x"}},
		{"delete_file", "**/.github/workflows", map[string]any{"path": "gh/workflows/ci.yml"}},
		{"move_file", "**/.github/workflows", map[string]any{"source": "gh", "destination": "gh2"}},
		{"delete_file", "**/.github/workflows", map[string]any{"path": "gh", "recursive": true}},
		{"write_file", "**/.gitlab-ci.yml", map[string]any{"path": "ci/gitlab.yml", "content": "x"}},
		{"move_file", "**/.gitlab-ci.yml", map[string]any{"source": "ci", "destination": "ci2"}},
	} {
		_, te := e.call(tc.tool, tc.args)
		if te == nil || te.Type != tool.PermissionDenied || te.Details["rule"] != tc.rule {
			t.Errorf("%s %v: %v, want permission_denied by %s", tc.tool, tc.args, te, tc.rule)
		}
	}
	if after := snapshot(t, e.ws); after != before {
		t.Errorf("the disk changed:\n%s\n---\n%s", before, after)
	}
	for _, p := range []string{"gh/README.md", "ci/notes.md"} {
		if _, te := e.call("write_file", map[string]any{"path": p, "content": "ok\n"}); te != nil {
			t.Errorf("%s: %v", p, te)
		}
	}
}
