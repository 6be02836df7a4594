package mcpclient_test

import (
	"context"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/mcpclient"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tool"
)

// Include, exclude, rename and describe, on the real upstream process: the
// registry holds the shaped tools, and a renamed tool's call reaches the
// upstream under its own name.
func TestShaping(t *testing.T) {
	for _, tc := range []struct {
		name  string
		shape func(*mcpclient.Config)
		want  []string
	}{
		{"include", func(c *mcpclient.Config) { c.Tools = []string{"e*", "n*"} }, []string{"echo", "nuke"}},
		{"exclude", func(c *mcpclient.Config) { c.Exclude = []string{"*a*", "*s*"} }, []string{"echo", "grow", "nuke"}},
		{"include then exclude", func(c *mcpclient.Config) { c.Tools, c.Exclude = []string{"e*", "n*", "m*"}, []string{"nuke"} }, []string{"echo", "missing"}},
		{"rename", func(c *mcpclient.Config) {
			c.Tools, c.Rename = []string{"echo", "nuke"}, map[string]string{"echo": "say", "nuke": "echo"}
		}, []string{"echo", "say"}},
		{"rename a name that needed sanitising", func(c *mcpclient.Config) {
			c.Tools, c.Rename = []string{"write stuff"}, map[string]string{"write stuff": "write"}
		}, []string{"write"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := stdio(t, "up")
			cfg.NoPrefix = true
			tc.shape(&cfg)
			u, err := mcpclient.Connect(context.Background(), cfg, mcpclient.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer u.Close()
			var names []string
			for _, tl := range u.Tools() {
				names = append(names, tl.Definition().Name)
			}
			sort.Strings(names)
			if strings.Join(names, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("tools %v, want %v", names, tc.want)
			}
		})
	}

	cfg := stdio(t, "up")
	cfg.Rename = map[string]string{"echo": "say", "nuke": "echo"}
	cfg.Describe = map[string]string{"echo": "Repeat a text (the operator's words).", "missing": ""}
	u, err := mcpclient.Connect(context.Background(), cfg, mcpclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	say := find(t, u.Tools(), "up__say")
	if d := say.Definition(); d.Description != "Repeat a text (the operator's words)." || d.Title != "Echo" || d.Level != tool.LevelRead {
		t.Errorf("renamed and described echo: %+v", d)
	}
	if d := find(t, u.Tools(), "up__missing").Definition(); d.Description != "" {
		t.Errorf("describe with an empty text kept %q", d.Description)
	}
	if res := run(t, say, `{"text":"through the new name"}`); res.IsError() || res.Content[0].Text != "through the new name" {
		t.Errorf("up__say reached %+v, want the upstream's echo", res)
	}
	if res := run(t, find(t, u.Tools(), "up__echo"), `{}`); res.IsError() || res.Text() != "boom" {
		t.Errorf("up__echo (renamed nuke) answered %+v, want the upstream's nuke", res)
	}
}

// Options.Wrap sees each tool with its upstream and original name, and
// what it returns is what is registered and run.
func TestWrap(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{}
	o := mcpclient.Options{Wrap: func(upstream, remote string, t tool.Tool) tool.Tool {
		mu.Lock()
		seen[t.Definition().Name] = upstream + "/" + remote
		mu.Unlock()
		return suffixed{t}
	}}
	cfg := stdio(t, "up")
	cfg.Tools, cfg.Rename = []string{"echo", "missing"}, map[string]string{"echo": "say"}
	reg := registry.New()
	gw, err := mcpclient.NewGateway(context.Background(), reg, o, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	if seen["up__say"] != "up/echo" || seen["up__missing"] != "up/missing" || len(seen) != 2 {
		t.Errorf("Wrap saw %v", seen)
	}
	tl, ok := reg.Lookup("up__say")
	if !ok {
		t.Fatal("up__say not registered")
	}
	if res := run(t, tl, `{"text":"hi"}`); !strings.HasPrefix(res.Text(), "hi (wrapped)") {
		t.Errorf("the registered tool is not the wrapped one: %q", res.Text())
	}
}

type suffixed struct{ tool.Tool }

func (s suffixed) Run(ctx context.Context, c tool.Call) (tool.Result, error) {
	res, err := s.Tool.Run(ctx, c)
	res.Content[0].Text += " (wrapped)"
	return res, err
}

// Names that collide across upstreams after prefixing and renaming are an
// error at load that names both upstreams; inside one upstream, so are two
// tools renamed to one name, or a rename onto a kept tool's name.
func TestShapingCollisions(t *testing.T) {
	ctx := context.Background()
	a, b := stdio(t, "a"), stdio(t, "b")
	a.Tools, b.Tools = []string{"echo"}, []string{"nuke"}
	b.Prefix, b.Rename = "a", map[string]string{"nuke": "echo"}
	if _, err := mcpclient.NewGateway(ctx, registry.New(), mcpclient.Options{}, a, b); err == nil ||
		!strings.Contains(err.Error(), "upstream a and upstream b both give a tool named a__echo") || !strings.Contains(err.Error(), "tools.rename") {
		t.Errorf("a rename onto another upstream's name: %v", err)
	}
	b.Rename = map[string]string{"nuke": "blast"}
	gw, err := mcpclient.NewGateway(ctx, registry.New(), mcpclient.Options{}, a, b)
	if err != nil {
		t.Fatalf("after renaming apart: %v", err)
	}
	gw.Close()

	c := stdio(t, "c")
	c.Rename = map[string]string{"nuke": "echo"}
	if _, err := mcpclient.Connect(ctx, c, mcpclient.Options{}); err == nil || !strings.Contains(err.Error(), "both named c__echo") {
		t.Errorf("a rename onto a kept tool of the same upstream: %v", err)
	}
	for _, tc := range []struct {
		rename map[string]string
		want   string
	}{
		{map[string]string{"echo": "x", "nuke": "x"}, "both renamed to x"},
		{map[string]string{"echo": "a b"}, "a new name"},
		{map[string]string{"echo": ""}, "a new name"},
		{map[string]string{"echo": strings.Repeat("x", 126)}, "with the prefix"},
	} {
		cfg := mcpclient.Config{Name: "up", Command: "x", Rename: tc.rename}
		if err := cfg.Check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("rename %v: %v, want %q", tc.rename, err, tc.want)
		}
	}
	if err := (&mcpclient.Config{Name: "up", Command: "x", Exclude: []string{"["}}).Check(); err == nil || !strings.Contains(err.Error(), "not a valid pattern") {
		t.Errorf("a bad exclude glob: %v", err)
	}
}
