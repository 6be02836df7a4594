package fs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/tool"
)

func TestApplyPatch(t *testing.T) {
	e := newEnv(t, Options{})
	mustWrite(t, filepath.Join(e.ws, "upd.go"), "package a\n\nfunc A() int {\n\treturn 1\n}\n")
	mustWrite(t, filepath.Join(e.ws, "old.txt"), "move me\nline 2\n")
	mustWrite(t, filepath.Join(e.ws, "gone.txt"), "bye\n")
	os.Chmod(filepath.Join(e.ws, "upd.go"), 0o600)
	p := `*** Begin Patch
*** Add File: new/added.txt
+hello
+world
*** Update File: upd.go
@@ func A() int {
-	return 1
+	return 2
*** Update File: old.txt
*** Move to: moved/new.txt
@@
 move me
-line 2
+line two
*** Delete File: gone.txt
*** End Patch`
	res, err := e.call("apply_patch", map[string]any{"patch": p})
	if err != nil {
		t.Fatal(err.Text())
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(e.ws, name))
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(b)
	}
	if read("new/added.txt") != "hello\nworld\n" || !strings.Contains(read("upd.go"), "return 2") || read("moved/new.txt") != "move me\nline two\n" {
		t.Fatalf("contents wrong:\n%s", res.Text())
	}
	if _, err := os.Lstat(filepath.Join(e.ws, "old.txt")); err == nil {
		t.Fatal("moved source still there")
	}
	if _, err := os.Lstat(filepath.Join(e.ws, "gone.txt")); err == nil {
		t.Fatal("deleted file still there")
	}
	if fi, _ := os.Stat(filepath.Join(e.ws, "upd.go")); fi.Mode().Perm() != 0o600 {
		t.Fatal("mode not kept")
	}
	if !strings.Contains(res.Text(), "-\treturn 1\n+\treturn 2") {
		t.Fatalf("no diff:\n%s", res.Text())
	}
	leftovers(t, e)
}

// leftovers fails when a temporary or backup file is left in the workspace.
func leftovers(t *testing.T, e *env) {
	t.Helper()
	filepath.WalkDir(e.ws, func(p string, d os.DirEntry, err error) error {
		if err == nil && isTemp(d.Name()) {
			t.Errorf("left behind: %s", p)
		}
		return nil
	})
}

// TestApplyPatchAllOrNothing: any failing operation, found while planning
// or while committing, leaves every file as it was.
func TestApplyPatchAllOrNothing(t *testing.T) {
	cases := []struct {
		name  string
		patch string
		swap  bool // change the last file after staging: the commit must fail and roll back
		want  tool.ErrorType
	}{
		{name: "hunk does not match", patch: "*** Begin Patch\n*** Add File: n.txt\n+x\n*** Update File: a.txt\n@@\n-nope\n+x\n*** End Patch", want: tool.InvalidArguments},
		{name: "protected path", patch: "*** Begin Patch\n*** Update File: a.txt\n@@\n-a1\n+x\n*** Add File: .git/hooks/pre-commit\n+#!/bin/sh\n*** End Patch", want: tool.PermissionDenied},
		{name: "escape", patch: "*** Begin Patch\n*** Delete File: b.txt\n*** Add File: ../evil.txt\n+x\n*** End Patch", want: tool.PermissionDenied},
		{name: "move escape", patch: "*** Begin Patch\n*** Update File: a.txt\n*** Move to: ../../x.txt\n@@\n-a1\n+x\n*** End Patch", want: tool.PermissionDenied},
		{name: "add existing", patch: "*** Begin Patch\n*** Add File: b.txt\n+x\n*** End Patch", want: tool.Conflict},
		{name: "delete missing", patch: "*** Begin Patch\n*** Update File: a.txt\n@@\n-a1\n+x\n*** Delete File: zz.txt\n*** End Patch", want: tool.NotFound},
		{name: "same file twice", patch: "*** Begin Patch\n*** Update File: a.txt\n@@\n-a1\n+x\n*** Delete File: a.txt\n*** End Patch", want: tool.InvalidArguments},
		{name: "malformed", patch: "*** Begin Patch\n*** Frobnicate: a.txt\n*** End Patch", want: tool.InvalidArguments},
		{name: "changed under us", patch: "*** Begin Patch\n*** Add File: n/new.txt\n+x\n*** Delete File: b.txt\n*** Update File: a.txt\n*** Move to: m/a2.txt\n@@\n-a1\n+x\n*** Update File: c.txt\n@@\n-c1\n+x\n*** End Patch", swap: true, want: tool.Conflict},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, Options{})
			for _, f := range []string{"a", "b", "c"} {
				mustWrite(t, filepath.Join(e.ws, f+".txt"), f+"1\n"+f+"2\n")
			}
			os.MkdirAll(filepath.Join(e.ws, ".git", "hooks"), 0o755)
			if c.swap {
				e.set.afterRead = func(l Location) {
					mustWrite(t, filepath.Join(e.ws, l.Rel), "changed by someone else\n")
				}
			}
			before := snapshot(t, e.parent)
			_, err := e.call("apply_patch", map[string]any{"patch": c.patch})
			if err == nil || err.Type != c.want || err.Suggestion == "" {
				t.Fatalf("want %s, got %v", c.want, err)
			}
			after := snapshot(t, e.parent)
			if c.swap {
				before = strings.Replace(before, `ws/c.txt -rw-r--r-- "c1\nc2\n"`, `ws/c.txt -rw-r--r-- "changed by someone else\n"`, 1)
			}
			if after != before {
				t.Fatalf("the patch changed the disk:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			leftovers(t, e)
		})
	}
}

// FuzzApplyPatch feeds arbitrary patches to the tool: it never panics,
// never touches anything outside the root, and a failed patch changes
// nothing.
func FuzzApplyPatch(f *testing.F) {
	for _, s := range []string{
		"*** Begin Patch\n*** Add File: x.txt\n+a\n*** End Patch",
		"*** Begin Patch\n*** Update File: a.txt\n@@\n-a1\n+z\n*** End Patch",
		"*** Begin Patch\n*** Update File: a.txt\n*** Move to: ../a.txt\n@@\n a1\n*** End Patch",
		"*** Begin Patch\n*** Delete File: a.txt\n*** Add File: ../../x\n+x\n*** End Patch",
		"<<'EOF'\n*** Begin Patch\n*** Update File: a.txt\n a1\n-a2\n*** End of File\n*** End Patch\nEOF",
		"*** Begin Patch\n*** Update File: out/secret.txt\n@@\n-OUTSIDE-SECRET\n+x\n*** End Patch",
	} {
		f.Add(s)
	}
	e := newEnv(f, Options{})
	mustWrite(f, filepath.Join(e.ws, "a.txt"), "a1\na2\n")
	os.Symlink("../outside", filepath.Join(e.ws, "out"))
	outside := filepath.Join(e.parent, "outside")
	outBefore := snapshot(f, outside)
	f.Fuzz(func(t *testing.T, p string) {
		before := snapshot(t, e.ws)
		res, err := e.call("apply_patch", map[string]any{"patch": p})
		if got := snapshot(t, outside); got != outBefore {
			t.Fatalf("the patch changed the outside folder")
		}
		if strings.Contains(res.Text(), "OUTSIDE-SECRET") && !strings.Contains(p, "OUTSIDE-SECRET") {
			t.Fatalf("the result shows outside content")
		}
		if err != nil {
			if after := snapshot(t, e.ws); after != before {
				t.Fatalf("a failed patch (%s) changed the workspace", err.Message)
			}
			return
		}
		// Start the next input from the same state.
		os.RemoveAll(e.ws)
		os.MkdirAll(e.ws, 0o755)
		mustWrite(t, filepath.Join(e.ws, "a.txt"), "a1\na2\n")
		os.Symlink("../outside", filepath.Join(e.ws, "out"))
	})
}
