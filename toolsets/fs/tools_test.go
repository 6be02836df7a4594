package fs

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/tool"
)

// TestDefinitions checks the contract of the table in the issue: names,
// parameters, defaults, levels, annotations and tags.
func TestDefinitions(t *testing.T) {
	e := newEnv(t, Options{})
	want := map[string]struct {
		params   string
		level    tool.Level
		readOnly bool
		destr    bool
	}{
		"read_file":        {"limit=500 offset=1 path", 0, true, false},
		"write_file":       {"content path", 1, false, true},
		"edit_file":        {"dry_run=false edits path", 1, false, true},
		"apply_patch":      {"patch", 1, false, true},
		"list_directory":   {"depth=1 include_hidden=false path=\".\"", 0, true, false},
		"search_files":     {"case_insensitive=false context=0 glob limit=50 offset=0 output=\"content\" path=\".\" pattern target=\"content\"", 0, true, false},
		"get_file_info":    {"path", 0, true, false},
		"create_directory": {"path", 1, false, false},
		"move_file":        {"destination overwrite=false source", 1, false, true},
		"delete_file":      {"path recursive=false", 3, false, true},
	}
	if len(e.tools) != len(want) {
		t.Fatalf("%d tools, want %d", len(e.tools), len(want))
	}
	for name, w := range want {
		tl, ok := e.tools[name]
		if !ok {
			t.Fatalf("missing %s", name)
		}
		d := tl.Definition()
		var schema struct {
			Properties           map[string]struct{ Default json.RawMessage } `json:"properties"`
			AdditionalProperties *bool                                        `json:"additionalProperties"`
		}
		if err := json.Unmarshal(d.InputSchema, &schema); err != nil {
			t.Fatal(err)
		}
		var params []string
		for p, s := range schema.Properties {
			if s.Default != nil {
				p += "=" + string(s.Default)
			}
			params = append(params, p)
		}
		sortStrings(params)
		if got := strings.Join(params, " "); got != w.params {
			t.Errorf("%s parameters: %s, want %s", name, got, w.params)
		}
		if d.Level != w.level || d.Annotations.ReadOnly != w.readOnly || d.Annotations.Destructive != w.destr || d.Annotations.OpenWorld {
			t.Errorf("%s: level %d annotations %+v", name, d.Level, d.Annotations)
		}
		if !d.HasTag("fs") || !strings.Contains(d.Description, "xample") {
			t.Errorf("%s: tags %v, or no example in the description", name, d.Tags)
		}
	}
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func TestWriteFile(t *testing.T) {
	e := newEnv(t, Options{})
	res, err := e.call("write_file", map[string]any{"path": "a/b/c.txt", "content": "hello"})
	if err != nil || res.Meta["created"] != true || res.Meta["bytes_written"] != 5 {
		t.Fatalf("%v %v", res.Meta, err)
	}
	os.Chmod(filepath.Join(e.ws, "a/b/c.txt"), 0o751)
	res, err = e.call("write_file", map[string]any{"path": "a/b/c.txt", "content": "bye"})
	if err != nil || res.Meta["created"] != false {
		t.Fatalf("%v %v", res.Meta, err)
	}
	fi, _ := os.Stat(filepath.Join(e.ws, "a/b/c.txt"))
	b, _ := os.ReadFile(filepath.Join(e.ws, "a/b/c.txt"))
	if string(b) != "bye" || fi.Mode().Perm() != 0o751 {
		t.Fatalf("content %q mode %v", b, fi.Mode())
	}
	// Through an inside link, the target is written and the link kept.
	os.Symlink("a/b/c.txt", filepath.Join(e.ws, "ln"))
	if _, err := e.call("write_file", map[string]any{"path": "ln", "content": "via link"}); err != nil {
		t.Fatal(err.Text())
	}
	if b, _ := os.ReadFile(filepath.Join(e.ws, "a/b/c.txt")); string(b) != "via link" {
		t.Fatalf("target not written: %q", b)
	}
	if fi, _ := os.Lstat(filepath.Join(e.ws, "ln")); fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the link was replaced")
	}
}

func TestEditFile(t *testing.T) {
	e := newEnv(t, Options{})
	orig := "package main\n\nfunc main() {\n\tprintln(\"hi\")\n\tx := 1\n\tx = 1\n}\n"
	p := filepath.Join(e.ws, "m.go")
	mustWrite(t, p, orig)
	res, err := e.call("edit_file", map[string]any{"path": "m.go", "dry_run": true, "edits": []any{
		map[string]any{"old_string": "\"hi\"", "new_string": "\"hello\""},
	}})
	if err != nil || !strings.Contains(res.Text(), "+\tprintln(\"hello\")") {
		t.Fatalf("dry run: %v %s", err, res.Text())
	}
	if b, _ := os.ReadFile(p); string(b) != orig {
		t.Fatal("dry run wrote the file")
	}
	res, err = e.call("edit_file", map[string]any{"path": "m.go", "edits": []any{
		map[string]any{"old_string": "\"hi\"", "new_string": "\"hello\""},
		map[string]any{"old_string": "1", "new_string": "2", "replace_all": true},
	}})
	if err != nil || res.Meta["replacements"] != 3 {
		t.Fatalf("%v %v", err, res.Meta)
	}
	want := strings.NewReplacer("\"hi\"", "\"hello\"", "1", "2").Replace(orig)
	if b, _ := os.ReadFile(p); string(b) != want {
		t.Fatalf("got %q", b)
	}
	// Whitespace-only mismatch: the error points at the lines.
	_, err = e.call("edit_file", map[string]any{"path": "m.go", "edits": []any{map[string]any{"old_string": "x := 2\n  x = 2", "new_string": "y"}}})
	if err == nil || !strings.Contains(err.Message, "lines 5-6 match it except for whitespace") || err.Details["closest_line"] != 5 {
		t.Fatalf("whitespace hint: %v", err)
	}
	// Near miss: the closest line is shown.
	_, err = e.call("edit_file", map[string]any{"path": "m.go", "edits": []any{map[string]any{"old_string": "func mian() {", "new_string": "y"}}})
	if err == nil || !strings.Contains(err.Message, "3|func main() {") {
		t.Fatalf("closest line: %v", err)
	}
	// CRLF files accept LF old_strings.
	mustWrite(t, filepath.Join(e.ws, "w.txt"), "a\r\nb\r\nc\r\n")
	if _, err := e.call("edit_file", map[string]any{"path": "w.txt", "edits": []any{map[string]any{"old_string": "a\nb\n", "new_string": "A\nB\n"}}}); err != nil {
		t.Fatal(err.Text())
	}
	if b, _ := os.ReadFile(filepath.Join(e.ws, "w.txt")); string(b) != "A\r\nB\r\nc\r\n" {
		t.Fatalf("crlf: %q", b)
	}
}

// TestUnifiedDiff checks diffs against the real patch(1): applying the diff
// to the old text must give the new text.
func TestUnifiedDiff(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"alpha\n", "beta\n", "gamma\n", "delta\n", "eps\n"}
	gen := func(n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteString(words[rng.IntN(len(words))])
		}
		return b.String()
	}
	for i := 0; i < 60; i++ {
		old := gen(rng.IntN(40))
		lines := splitLines(old)
		for j := 0; j < 1+rng.IntN(4) && len(lines) > 0; j++ {
			k := rng.IntN(len(lines))
			switch rng.IntN(3) {
			case 0:
				lines = append(lines[:k], lines[k+1:]...)
			case 1:
				lines[k] = "changed\n"
			default:
				lines = append(lines[:k], append([]string{"inserted\n"}, lines[k:]...)...)
			}
		}
		nw := strings.Join(lines, "")
		if i%7 == 0 {
			nw = strings.TrimSuffix(nw, "\n")
		}
		d := unifiedDiff("f.txt", old, nw)
		if old == nw {
			continue
		}
		f := filepath.Join(dir, "f.txt")
		os.WriteFile(f, []byte(old), 0o644)
		cmd := exec.Command("patch", "-s", "-p1", "-f", "--no-backup-if-mismatch")
		cmd.Dir = dir
		cmd.Stdin = strings.NewReader(d)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("patch rejected the diff: %v %s\n%s", err, out, d)
		}
		if b, _ := os.ReadFile(f); string(b) != nw {
			t.Fatalf("patch gave %q, want %q\n%s", b, nw, d)
		}
	}
}

func TestListDirectory(t *testing.T) {
	e := newEnv(t, Options{MaxEntries: 6})
	for _, f := range []string{"a.txt", "b/c.txt", "b/d/e.txt", "ign/x.txt", "keep.log", "drop.log", ".hidden", ".gitignore", TempPrefix + "x"} {
		mustWrite(t, filepath.Join(e.ws, f), "x")
	}
	mustWrite(t, filepath.Join(e.ws, ".gitignore"), "ign/\n*.log\n!keep.log\n")
	mustWrite(t, filepath.Join(e.ws, "b", ".gitignore"), "d/\n")
	os.Symlink("../outside", filepath.Join(e.ws, "out"))
	res, err := e.call("list_directory", map[string]any{"depth": 3})
	if err != nil {
		t.Fatal(err.Text())
	}
	out := res.Structured.(ListDirectoryOut)
	var got []string
	for _, en := range out.Entries {
		got = append(got, en.Path+":"+en.Type)
	}
	if strings.Join(got, " ") != "a.txt:file b/:directory b/c.txt:file keep.log:file out:symlink" || out.Ignored != 3 || out.Truncated {
		t.Fatalf("entries %v ignored %d truncated %v\n%s", got, out.Ignored, out.Truncated, res.Text())
	}
	res, _ = e.call("list_directory", map[string]any{"depth": 3, "include_hidden": true})
	out = res.Structured.(ListDirectoryOut)
	if !out.Truncated || len(out.Entries) != 6 || !strings.Contains(res.Text(), "list cut at 6") || strings.Contains(res.Text(), TempPrefix) {
		t.Fatalf("cap: %s", res.Text())
	}
	// Listing a subfolder applies the .gitignore files above it.
	res, _ = e.call("list_directory", map[string]any{"path": "b", "depth": 2})
	if strings.Contains(res.Text(), "e.txt") || !strings.Contains(res.Text(), "c.txt") {
		t.Fatalf("subfolder: %s", res.Text())
	}
}

func TestGetFileInfo(t *testing.T) {
	e := newEnv(t, Options{})
	mustWrite(t, filepath.Join(e.ws, "a.json"), "{\n\"a\": 1\n}\n")
	mustWrite(t, filepath.Join(e.ws, "img"), "\x89PNG\r\n\x1a\n\x00\x00")
	os.Symlink("a.json", filepath.Join(e.ws, "ln"))
	res, err := e.call("get_file_info", map[string]any{"path": "ln"})
	if err != nil {
		t.Fatal(err.Text())
	}
	fi := res.Structured.(FileInfo)
	if fi.Type != "file" || *fi.Lines != 3 || *fi.Binary || fi.MIME != "application/json" || fi.LinkTarget != "a.json" || fi.Path != "a.json" {
		t.Fatalf("%+v", fi)
	}
	res, _ = e.call("get_file_info", map[string]any{"path": "img"})
	if fi := res.Structured.(FileInfo); !*fi.Binary || fi.MIME != "image/png" || fi.Lines != nil {
		t.Fatalf("%+v", fi)
	}
	res, _ = e.call("get_file_info", map[string]any{"path": "."})
	if fi := res.Structured.(FileInfo); fi.Type != "directory" || *fi.Entries != 3 {
		t.Fatalf("%+v", fi)
	}
}

func TestMoveAndDelete(t *testing.T) {
	e := newEnv(t, Options{})
	mustWrite(t, filepath.Join(e.ws, "a.txt"), "A")
	mustWrite(t, filepath.Join(e.ws, "b.txt"), "B")
	mustWrite(t, filepath.Join(e.ws, "d/x.txt"), "X")
	if _, err := e.call("move_file", map[string]any{"source": "a.txt", "destination": "b.txt"}); err == nil || err.Type != tool.Conflict {
		t.Fatalf("overwrite without asking: %v", err)
	}
	if _, err := e.call("move_file", map[string]any{"source": "a.txt", "destination": "b.txt", "overwrite": true}); err != nil {
		t.Fatal(err.Text())
	}
	if b, _ := os.ReadFile(filepath.Join(e.ws, "b.txt")); string(b) != "A" {
		t.Fatal("not moved")
	}
	if _, err := e.call("move_file", map[string]any{"source": "d", "destination": "new/place/d2"}); err != nil {
		t.Fatal(err.Text())
	}
	if _, err := e.call("move_file", map[string]any{"source": "new", "destination": "new/inner"}); err == nil {
		t.Fatal("moved a folder into itself")
	}
	if _, err := e.call("delete_file", map[string]any{"path": "new"}); err == nil || err.Type != tool.Conflict {
		t.Fatalf("non-empty folder: %v", err)
	}
	// A folder tree is mass deletion: the tool asks a person first.
	if _, err := e.call("delete_file", map[string]any{"path": "new", "recursive": true}); err == nil || !err.AsksApproval() ||
		!strings.Contains(err.Message, "3 entries") {
		t.Fatalf("a recursive delete did not ask: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "new", "place", "d2")); err != nil {
		t.Fatalf("the folder changed before approval: %v", err)
	}
	res, err := e.callCtx(tool.WithApproval(context.Background()), "delete_file", map[string]any{"path": "new", "recursive": true})
	if err != nil || res.Meta["removed"] != 4 {
		t.Fatalf("%v %v", err, res.Meta)
	}
	e.call("create_directory", map[string]any{"path": "empty"})
	if _, err := e.call("delete_file", map[string]any{"path": "empty", "recursive": true}); err != nil {
		t.Fatalf("an empty folder asked: %v", err)
	}
	os.Symlink("../outside", filepath.Join(e.ws, "o"))
	if _, err := e.call("delete_file", map[string]any{"path": "o", "recursive": true}); err != nil {
		t.Fatal(err.Text())
	}
	if _, err := os.Stat(filepath.Join(e.parent, "outside", "secret.txt")); err != nil {
		t.Fatal("deleting a link removed its target")
	}
}

func TestCreateDirectory(t *testing.T) {
	e := newEnv(t, Options{})
	res, err := e.call("create_directory", map[string]any{"path": "a/b/c"})
	if err != nil || res.Meta["created"] != true {
		t.Fatal(err, res.Meta)
	}
	res, err = e.call("create_directory", map[string]any{"path": "a/b/c"})
	if err != nil || res.Meta["created"] != false {
		t.Fatal(err, res.Meta)
	}
	mustWrite(t, filepath.Join(e.ws, "f"), "x")
	if _, err := e.call("create_directory", map[string]any{"path": "f"}); err == nil || err.Type != tool.Conflict {
		t.Fatal(err)
	}
}

// TestMultipleRoots: relative paths go to the first root, absolute ones to
// the root that holds them; moves do not cross roots.
func TestMultipleRoots(t *testing.T) {
	second := t.TempDir()
	mustWrite(t, filepath.Join(second, "s.txt"), "second\n")
	e := newEnv(t, Options{}, second)
	mustWrite(t, filepath.Join(e.ws, "f.txt"), "first\n")
	res, err := e.call("read_file", map[string]any{"path": filepath.Join(second, "s.txt")})
	if err != nil || !strings.Contains(res.Text(), "1|second") || res.Meta["path"] != filepath.Join(second, "s.txt") {
		t.Fatalf("%v %s %v", err, res.Text(), res.Meta)
	}
	if _, err := e.call("read_file", map[string]any{"path": "s.txt"}); err == nil {
		t.Fatal("a relative path reached the second root")
	}
	if _, err := e.call("move_file", map[string]any{"source": "f.txt", "destination": filepath.Join(second, "f.txt")}); err == nil || err.Type != tool.InvalidArguments {
		t.Fatalf("cross-root move: %v", err)
	}
}
