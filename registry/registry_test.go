package registry_test

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tool"
)

func mk(name string, tags ...string) tool.Tool {
	return tool.Func(tool.Definition{Name: name, Description: "test tool " + name, Tags: tags},
		func(context.Context, tool.Call) (tool.Result, error) { return tool.TextResult(name), nil })
}

func names(defs []tool.Definition) []string {
	var out []string
	for _, d := range defs {
		out = append(out, d.Name)
	}
	return out
}

func TestRegisterLookupList(t *testing.T) {
	r := registry.New()
	if err := r.Register(mk("b_tool", "fs"), mk("a_tool", "web"), mk("c_tool", "fs", "web")); err != nil {
		t.Fatal(err)
	}
	if got := names(r.List(registry.Filter{})); !reflect.DeepEqual(got, []string{"b_tool", "a_tool", "c_tool"}) {
		t.Errorf("List order = %v, want registration order", got)
	}
	if got := names(r.List(registry.Filter{Tags: []string{"web"}})); !reflect.DeepEqual(got, []string{"a_tool", "c_tool"}) {
		t.Errorf("List(web) = %v", got)
	}
	if _, ok := r.Lookup("a_tool"); !ok {
		t.Error("Lookup(a_tool) failed")
	}
	if _, ok := r.Lookup("A_TOOL"); ok {
		t.Error("Lookup is case-sensitive: A_TOOL must not be found")
	}
	want := []registry.TagCount{{"fs", 2}, {"web", 2}}
	if got := r.Tags(); !reflect.DeepEqual(got, want) {
		t.Errorf("Tags = %v, want %v", got, want)
	}
}

func TestRegisterRejects(t *testing.T) {
	r := registry.New()
	if err := r.Register(mk("one")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		tools []tool.Tool
	}{
		{"duplicate of existing", []tool.Tool{mk("two"), mk("one")}},
		{"duplicate within batch", []tool.Tool{mk("three"), mk("three")}},
		{"empty name", []tool.Tool{mk("")}},
		{"space in name", []tool.Tool{mk("read file")}},
		{"slash in name", []tool.Tool{mk("a/b")}},
		{"bad level", []tool.Tool{tool.Func(tool.Definition{Name: "lvl", Level: 7}, nil)}},
	} {
		if err := r.Register(tc.tools...); err == nil {
			t.Errorf("%s: Register succeeded, want error", tc.name)
		}
	}
	// All or none: nothing of the failed batches was added.
	if got := r.Names(); !reflect.DeepEqual(got, []string{"one"}) {
		t.Errorf("after failed registrations Names = %v, want [one]", got)
	}
}

func TestEnableDisableAndEvents(t *testing.T) {
	r := registry.New()
	var mu sync.Mutex
	var events []string
	cancel := r.Subscribe(func(ev registry.Event) {
		mu.Lock()
		events = append(events, fmt.Sprint(ev.Kind, ev.Names))
		mu.Unlock()
	})
	r.Register(mk("x", "set"), mk("y", "set"), mk("z"))
	if err := r.Disable("x"); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Lookup("x"); ok {
		t.Error("a disabled tool must not be callable")
	}
	if got := names(r.List(registry.Filter{})); !reflect.DeepEqual(got, []string{"y", "z"}) {
		t.Errorf("List without disabled = %v", got)
	}
	if got := names(r.List(registry.Filter{Disabled: true})); len(got) != 3 {
		t.Errorf("List with disabled = %v", got)
	}
	if err := r.Disable("x"); err != nil { // no change, no event
		t.Fatal(err)
	}
	if err := r.Disable("nope"); err == nil {
		t.Error("Disable of an unknown tool must fail")
	}
	r.SetTagEnabled("set", false)
	r.SetTagEnabled("set", true)
	r.Unregister("z", "unknown")
	cancel()
	r.Register(mk("after"))
	want := []string{"added[x y z]", "disabled[x]", "disabled[y]", "enabled[x y]", "removed[z]"}
	if !reflect.DeepEqual(events, want) {
		t.Errorf("events = %v\nwant     %v", events, want)
	}
}

func TestConcurrentReadersAndWriters(t *testing.T) {
	r := registry.New()
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for j := 0; j < 200; j++ {
				r.Register(mk(fmt.Sprintf("t%d_%d", i, j)))
			}
		}()
		go func() {
			defer wg.Done()
			for j := 0; j < 200; j++ {
				r.Lookup(fmt.Sprintf("t%d_%d", i, j))
				r.List(registry.Filter{})
			}
		}()
	}
	wg.Wait()
	if n := len(r.Names()); n != 1600 {
		t.Errorf("registered %d tools, want 1600", n)
	}
}

func TestValidName(t *testing.T) {
	for name, want := range map[string]bool{
		"read_file": true, "github__create_issue": true, "a.b-c": true, "x": true,
		strings.Repeat("n", 128): true, strings.Repeat("n", 129): false,
		"": false, "has space": false, "émoji": false, "a/b": false,
	} {
		if got := registry.ValidName(name); got != want {
			t.Errorf("ValidName(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestValidNameMatchesPattern checks the byte-by-byte ValidName against the
// pattern it stands for, for every byte in several places of a name and at
// the length limits.
func TestValidNameMatchesPattern(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)
	var names []string
	for b := range 256 {
		c := string([]byte{byte(b)})
		names = append(names, c, "a"+c, c+"b", "read"+c+"file", c+c, strings.Repeat("n", 127)+c, strings.Repeat("n", 128)+c)
	}
	names = append(names, "a\n", "\na", "a\x00", "ä", "\xff", strings.Repeat("é", 64), strings.Repeat(".", 128), "-", "_")
	for _, name := range names {
		if got, want := registry.ValidName(name), re.MatchString(name); got != want {
			t.Errorf("ValidName(%q) = %v, the pattern says %v", name, got, want)
		}
	}
}
