package trust

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Box is what the box of a stdio upstream lets it reach (the gateway's
// isolation block): part of its pinned identity. A Box that grants more
// than the pinned one (a new write path, a new domain, mode off, higher
// limits) is a changed identity, quarantined until approved; one that
// grants less is not, and replaces the pinned one.
type Box struct {
	Off       bool     `json:"off,omitempty"`
	Read      []string `json:"read,omitempty"`
	Write     []string `json:"write,omitempty"`
	Config    []string `json:"config,omitempty"` // write grants whose auto-run files are writable too
	Network   []string `json:"network,omitempty"`
	Private   []string `json:"private,omitempty"`
	Env       []string `json:"env,omitempty"` // names of the variables it gets
	Memory    int64    `json:"memory,omitempty"`
	Processes int      `json:"processes,omitempty"`
}

// Widening lists what b grants that a does not ("" items none). A nil a
// is an upstream pinned before it had a box (or never boxed): a box of any
// kind, but off, grants it nothing more.
func (a *Box) Widening(b *Box) []string {
	switch {
	case b == nil && a == nil:
		return nil
	case b == nil:
		return []string{"it no longer runs in a box"}
	case a == nil:
		if b.Off {
			return []string{"mode: off"}
		}
		return nil
	case a.Off:
		return nil
	case b.Off:
		return []string{"mode: off"}
	}
	var out []string
	under := func(p string, in []string) bool {
		return slices.ContainsFunc(in, func(d string) bool {
			rel, err := filepath.Rel(d, p)
			return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
		})
	}
	for _, p := range b.Read {
		if !under(p, a.Read) && !under(p, a.Write) {
			out = append(out, "read "+p)
		}
	}
	for _, p := range b.Write {
		if !under(p, a.Write) {
			out = append(out, "write "+p)
		}
	}
	for _, p := range b.Config {
		if !under(p, a.Config) {
			out = append(out, "config: true on "+p)
		}
	}
	for _, d := range b.Network {
		if !slices.Contains(a.Network, d) && !(strings.Count(d, ".") > 1 && slices.Contains(a.Network, "*."+d[strings.IndexByte(d, '.')+1:])) {
			out = append(out, "network "+d)
		}
	}
	for _, d := range b.Private {
		if !slices.Contains(a.Private, d) {
			out = append(out, "private "+d)
		}
	}
	for _, e := range b.Env {
		if !slices.Contains(a.Env, e) {
			out = append(out, "env "+e)
		}
	}
	if b.Memory > a.Memory {
		out = append(out, fmt.Sprintf("memory %d bytes (was %d)", b.Memory, a.Memory))
	}
	if b.Processes > a.Processes {
		out = append(out, fmt.Sprintf("processes %d (was %d)", b.Processes, a.Processes))
	}
	return out
}

// equalBox reports whether a and b grant exactly the same.
func equalBox(a, b *Box) bool {
	return len(a.Widening(b)) == 0 && len(b.Widening(a)) == 0 && (a == nil) == (b == nil)
}
