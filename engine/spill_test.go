package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tool"
)

// spillEngine returns an engine whose one tool prints more than its budget,
// spilling into .toolgate/spill under ws.
func spillEngine(t *testing.T, ws string) *engine.Engine {
	t.Helper()
	reg := registry.New()
	reg.Register(tool.New("print", "Prints a lot.", func(ctx context.Context, in struct{}) (string, error) {
		return strings.Repeat("line of output\n", 200), nil
	}, tool.ReadOnly()))
	return engine.New(engine.Options{Registry: reg, MaxResultBytes: 200,
		Spill: engine.Spill{Root: ws, Dir: ".toolgate/spill", ShowAs: ".toolgate/spill"}})
}

// oldFiles fills dir with n files a week old, named like spills when
// spillNames is set.
func oldFiles(t *testing.T, dir string, n int, spillNames bool) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	week := time.Now().Add(-7 * 24 * time.Hour)
	for i := range n {
		name := fmt.Sprintf("victim-%03d.txt", i)
		if spillNames {
			name = fmt.Sprintf("20200101-000000-%012x.txt", i)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("keep me"), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, week, week)
	}
}

func count(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// TestSpillRefusesLinks: the spill folder lies in a workspace that tools
// and commands change; a link anywhere on its way (to a folder outside, or
// inside) is refused, and nothing where it points is written or removed.
func TestSpillRefusesLinks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(ws, victim string) error
	}{
		{".toolgate links outside", func(ws, victim string) error { return os.Symlink(victim, filepath.Join(ws, ".toolgate")) }},
		{"spill links outside", func(ws, victim string) error {
			os.Mkdir(filepath.Join(ws, ".toolgate"), 0o700)
			return os.Symlink(victim, filepath.Join(ws, ".toolgate", "spill"))
		}},
		{"spill links inside", func(ws, victim string) error {
			os.Mkdir(filepath.Join(ws, ".toolgate"), 0o700)
			return os.Symlink("../src", filepath.Join(ws, ".toolgate", "spill"))
		}},
		{"spill is a file", func(ws, victim string) error {
			os.Mkdir(filepath.Join(ws, ".toolgate"), 0o700)
			return os.WriteFile(filepath.Join(ws, ".toolgate", "spill"), nil, 0o600)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ws, victim := filepath.Join(dir, "ws"), filepath.Join(dir, "victim")
			oldFiles(t, victim, 70, true)
			oldFiles(t, filepath.Join(ws, "src"), 70, true)
			if err := tc.setup(ws, victim); err != nil {
				t.Fatal(err)
			}
			res := spillEngine(t, ws).Execute(context.Background(), tool.Call{Name: "print"})
			if res.IsError() || !strings.Contains(res.Text(), "output truncated") || strings.Contains(res.Text(), "read_file") {
				t.Errorf("want a truncated result without a spill: %.300s", res.Text())
			}
			if n := count(t, victim); n != 70 {
				t.Errorf("the folder outside holds %d files, want 70", n)
			}
			if n := count(t, filepath.Join(ws, "src")); n != 70 {
				t.Errorf("src holds %d files, want 70", n)
			}
		})
	}
}

// TestSpillRemovesOnlyOldSpills: past 64 entries, spills older than a day
// go; other files, however old, and folders stay.
func TestSpillRemovesOnlyOldSpills(t *testing.T) {
	ws := t.TempDir()
	dir := filepath.Join(ws, ".toolgate", "spill")
	oldFiles(t, dir, 70, true)
	oldFiles(t, dir, 5, false)
	os.Mkdir(filepath.Join(dir, "20200101-000000-000000000099.txt"), 0o700) // a folder named like a spill
	res := spillEngine(t, ws).Execute(context.Background(), tool.Call{Name: "print"})
	if !strings.Contains(res.Text(), `read_file {"path":".toolgate/spill/`) {
		t.Fatalf("no spill: %.300s", res.Text())
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(entries) != 5+1+1 { // the others, the folder, the new spill
		t.Errorf("left %d entries, want 7: %v", len(entries), names)
	}
	for i := range 5 {
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("victim-%03d.txt", i))); err != nil {
			t.Errorf("a file not named as a spill was removed: %v", err)
		}
	}
}
