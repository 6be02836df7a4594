package engine

import (
	"context"
	"sort"
	"strings"

	"github.com/toolgate/toolgate/schema"
	"github.com/toolgate/toolgate/tool"
)

// lookup finds the tool; an unknown name, or a tool hidden from the
// caller (Visible), is answered with the closest names it may see.
func (e *Engine) lookup(next handler) handler {
	return func(ctx context.Context, p *pending) tool.Result {
		t, ok := e.opts.Registry.Lookup(p.call.Name)
		if !ok {
			return tool.ErrorResult(unknownTool(p.call.Name, e.VisibleNames(p.call)))
		}
		def := t.Definition() // once: a Definition is a large struct, copied
		if !e.Visible(def, p.call) {
			return tool.ErrorResult(unknownTool(p.call.Name, e.VisibleNames(p.call)))
		}
		p.tool, p.def = t, def
		return next(ctx, p)
	}
}

func unknownTool(name string, names []string) *tool.Error {
	err := tool.Errorf(tool.UnknownTool, "there is no tool named %q", name)
	near := closest(name, names, 3)
	switch {
	case len(near) > 0:
		err.WithSuggestion("did you mean %s? Call one of the tools you were given, by its exact name", strings.Join(quoteAll(near), " or "))
		err.WithDetail("closest", near)
	case len(names) == 0:
		err.WithSuggestion("no tools are available; answer without calling one")
	default:
		err.WithSuggestion("call one of the tools you were given, by its exact name")
	}
	return err
}

// closest returns up to n names near name: equal but for case, separators
// or a prefix, or within a small edit distance, best first.
func closest(name string, names []string, n int) []string {
	type cand struct {
		name string
		dist int
	}
	norm := func(s string) string {
		return strings.NewReplacer("_", "", "-", "", ".", "").Replace(strings.ToLower(s))
	}
	target := norm(name)
	if len(target) > 128 {
		return nil
	}
	var cands []cand
	for _, c := range names {
		nc := norm(c)
		d := schema.EditDistance(target, nc)
		switch {
		case nc == target:
			d = 0
		case strings.HasSuffix(nc, target) || strings.HasSuffix(target, nc) ||
			strings.HasPrefix(nc, target) || strings.HasPrefix(target, nc):
			d = min(d, 1) // "read" for "read_file", "fs__read_file" for "read_file"
		}
		limit := max(2, len(target)/3)
		if d <= limit {
			cands = append(cands, cand{c, d})
		}
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].dist != cands[j].dist {
			return cands[i].dist < cands[j].dist
		}
		return cands[i].name < cands[j].name
	})
	out := make([]string, 0, n)
	for i := 0; i < len(cands) && i < n; i++ {
		out = append(out, cands[i].name)
	}
	return out
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = `"` + x + `"`
	}
	return out
}
