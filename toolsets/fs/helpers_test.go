package fs

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/tool"
)

// env is a workspace for tests: parent/ws is the root; parent/outside and
// parent/home lie outside it.
type env struct {
	t      *testing.T
	parent string
	ws     string
	roots  *Roots
	set    *Set
	tools  map[string]tool.Tool
}

func newEnv(t testing.TB, opts Options, extraRoots ...string) *env {
	t.Helper()
	parent := t.TempDir()
	ws := filepath.Join(parent, "ws")
	for _, d := range []string{ws, filepath.Join(parent, "outside"), filepath.Join(parent, "home", ".ssh")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(t, filepath.Join(parent, "outside", "secret.txt"), "OUTSIDE-SECRET\n")
	mustWrite(t, filepath.Join(parent, "secret.txt"), "PARENT-SECRET\n")
	mustWrite(t, filepath.Join(parent, "home", ".ssh", "id_rsa"), "HOME-KEY\n")
	mustWrite(t, filepath.Join(parent, "home", ".bashrc"), "# home rc\n")
	roots, err := OpenRoots(append([]string{ws}, extraRoots...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { roots.Close() })
	set, err := New(roots, opts)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{parent: parent, ws: ws, roots: roots, set: set, tools: map[string]tool.Tool{}}
	if tt, ok := t.(*testing.T); ok {
		e.t = tt
	}
	for _, tl := range set.Tools() {
		e.tools[tl.Definition().Name] = tl
	}
	return e
}

func mustWrite(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// call runs a tool as the engine would, turning a Go error into the
// result's Error.
func (e *env) call(name string, args any) (tool.Result, *tool.Error) {
	return e.callCtx(context.Background(), name, args)
}

// callCtx is call with a context (tool.WithApproval: a person said yes).
func (e *env) callCtx(ctx context.Context, name string, args any) (tool.Result, *tool.Error) {
	var raw json.RawMessage
	switch a := args.(type) {
	case string:
		raw = json.RawMessage(a)
	default:
		b, err := json.Marshal(a)
		if err != nil {
			panic(err)
		}
		raw = b
	}
	t, ok := e.tools[name]
	if !ok {
		panic("no tool " + name)
	}
	res, err := t.Run(ctx, tool.Call{Name: name, Args: raw})
	if err != nil {
		te := tool.AsError(err)
		return tool.ErrorResult(te), te
	}
	return res, res.Error
}

// snapshot describes every entry under dir (type, mode, size, content or
// link target), to compare a tree before and after a call.
func snapshot(t testing.TB, dir string) string {
	t.Helper()
	var lines []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			lines = append(lines, p+" ERR "+err.Error())
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			lines = append(lines, rel+" ERR "+err.Error())
			return nil
		}
		line := rel + " " + info.Mode().String()
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case info.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			line += " " + strconv.Quote(string(b))
		}
		lines = append(lines, line)
		return nil
	})
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
