package fs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSearchFiles(t *testing.T) {
	e := newEnv(t, Options{})
	mustWrite(t, filepath.Join(e.ws, "a.go"), "package a\nfunc RunContext() {}\n")
	mustWrite(t, filepath.Join(e.ws, "b/b.go"), "package b\nfunc StopContext() {}\nfunc other() {}\n")
	mustWrite(t, filepath.Join(e.ws, "keys/server.pem"), "func LeakContext() {}\n")
	mustWrite(t, filepath.Join(e.ws, "ignored/x.go"), "func IgnoredContext() {}\n")
	mustWrite(t, filepath.Join(e.ws, ".gitignore"), "ignored/\n")
	mustWrite(t, filepath.Join(e.ws, ".env"), "func EnvContext() {}\n")
	os.Symlink(".env", filepath.Join(e.ws, "cfg.txt"))
	os.Symlink("../outside", filepath.Join(e.ws, "out"))
	mustWrite(t, filepath.Join(e.parent, "outside", "o.go"), "func OUTSIDE-SECRET Context() {}\n")

	res, err := e.call("search_files", map[string]any{"pattern": `func \w+Context\(`})
	if err != nil {
		t.Fatal(err.Text())
	}
	if res.Text() != "a.go:2:func RunContext() {}\nb/b.go:2:func StopContext() {}\n(1 result(s) in protected files not shown)" &&
		res.Text() != "a.go:2:func RunContext() {}\nb/b.go:2:func StopContext() {}\n(2 result(s) in protected files not shown)" {
		t.Fatalf("content search:\n%s", res.Text())
	}
	for _, bad := range []string{"Leak", "Env", "Ignored", "OUTSIDE"} {
		if strings.Contains(res.Text(), bad) {
			t.Fatalf("search shows %s:\n%s", bad, res.Text())
		}
	}
	res, err = e.call("search_files", map[string]any{"pattern": "**/*.go", "target": "files"})
	if err != nil || res.Text() != "a.go\nb/b.go" {
		t.Fatalf("files: %v\n%s", err, res.Text())
	}
	res, err = e.call("search_files", map[string]any{"pattern": "FUNC", "case_insensitive": true, "output": "count", "glob": "*.go"})
	if err != nil || res.Text() != "a.go:1\nb/b.go:2" {
		t.Fatalf("count: %v\n%s", err, res.Text())
	}
	res, err = e.call("search_files", map[string]any{"pattern": "func", "glob": "*.go", "limit": 1, "offset": 1})
	if err != nil || !strings.HasPrefix(res.Text(), "b/b.go:2:") || !strings.Contains(res.Text(), "continue with offset=2") {
		t.Fatalf("paging: %v\n%s", err, res.Text())
	}
	for _, args := range []map[string]any{
		{"pattern": "(unclosed"},
		{"pattern": "x", "path": "../outside"},
		{"pattern": "x", "path": "out"},
		{"pattern": "x", "extra_args": []string{"--pre", "sh"}},
		{"pattern": "x", "target": "both"},
		{"pattern": "x", "path": ".env"},
	} {
		if _, err := e.call("search_files", args); err == nil {
			t.Errorf("search_files %v: no error", args)
		} else {
			checkDenial(t, err)
		}
	}
}
