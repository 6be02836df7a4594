package registry_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tool"
)

// TestLazyTools: a tool.Lazy is registered by its head (name, level,
// tags) and built on the first use of its whole definition or of the tool,
// once, whatever the number of concurrent first uses (run with -race).
func TestLazyTools(t *testing.T) {
	type in struct {
		N int `json:"n" minimum:"1"`
	}
	var builds atomic.Int32
	lazy := func(name string, opts ...tool.Option) tool.Tool {
		return tool.Lazy(tool.HeadOf(name, "d", opts...), func() tool.Tool {
			builds.Add(1)
			return tool.New(name, "d", func(_ context.Context, v in) (string, error) { return "ok", nil }, opts...)
		})
	}
	uses := []struct {
		name string
		use  func(*registry.Registry)
	}{
		{"Definition", func(r *registry.Registry) { r.Definition("a") }},
		{"List", func(r *registry.Registry) { r.List(registry.Filter{}) }},
		{"List by tag", func(r *registry.Registry) { r.List(registry.Filter{Tags: []string{"t"}}) }},
		{"Run", func(r *registry.Registry) {
			tl, _ := r.Lookup("a")
			tl.Run(context.Background(), tool.Call{Name: "a", Args: []byte(`{"n":1}`)})
		}},
	}
	for _, u := range uses {
		t.Run(u.name, func(t *testing.T) {
			builds.Store(0)
			r := registry.New()
			if err := r.Register(lazy("a", tool.WithTags("t"), tool.WithLevel(tool.LevelRead)), lazy("b")); err != nil {
				t.Fatal(err)
			}
			// what the head answers builds nothing
			r.Names()
			r.Tags()
			r.Lookup("a")
			r.List(registry.Filter{Tags: []string{"none"}})
			if n := builds.Load(); n != 0 {
				t.Fatalf("%d tools built before any use", n)
			}
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() { u.use(r) })
			}
			wg.Wait()
			want := int32(1)
			if u.name == "List" {
				want = 2
			}
			if n := builds.Load(); n != want {
				t.Errorf("%d tools built, want %d", n, want)
			}
			def, _ := r.Definition("a")
			if def.Level != tool.LevelRead || len(def.InputSchema) == 0 || def.Tags[0] != "t" {
				t.Errorf("definition %+v", def)
			}
		})
	}
	r := registry.New()
	if err := r.Register(lazy("bad name!")); err == nil {
		t.Error("a lazy tool with an invalid name was registered")
	}
	if err := r.Register(lazy("x", tool.WithLevel(9))); err == nil {
		t.Error("a lazy tool with an invalid level was registered")
	}
}
