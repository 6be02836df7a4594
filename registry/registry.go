package registry

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/toolgate/toolgate/tool"
)

// EventKind says what changed.
type EventKind string

const (
	Added    EventKind = "added"
	Removed  EventKind = "removed"
	Enabled  EventKind = "enabled"
	Disabled EventKind = "disabled"
)

// Event is one change to the registry.
type Event struct {
	Kind  EventKind
	Names []string
}

// Registry is a set of tools with unique names. The zero value is not usable;
// call New.
type Registry struct {
	mu      sync.Mutex // serialises writers
	deliver sync.Mutex // keeps events in order while subscribers run
	snap    atomic.Pointer[snapshot]
	subs    map[int]func(Event)
	nextID  int
}

type entry struct {
	tool tool.Tool
	// head is the definition, but for a tool.Headed (tool.Lazy) its
	// definition without the schemas, and def the whole definition, made
	// on first use: a command that runs one call does not infer the
	// schemas of every tool.
	head    tool.Definition
	def     func() tool.Definition
	enabled bool
}

// snapshot is an immutable view: writers copy, readers load.
type snapshot struct {
	order  []string // registration order
	byName map[string]*entry
}

// New returns an empty registry.
func New() *Registry {
	r := &Registry{subs: map[int]func(Event){}}
	r.snap.Store(&snapshot{byName: map[string]*entry{}})
	return r
}

// ValidName reports whether name is accepted as a tool name: 1 to 128
// ASCII letters, digits, '_', '-' or '.' (what MCP and every model API
// accept; ^[A-Za-z0-9_.-]{1,128}$, checked byte by byte: no program pays
// at start for compiling it).
func ValidName(name string) bool {
	if name == "" || len(name) > 128 {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '.', c == '-':
		default:
			return false
		}
	}
	return true
}

// Register adds tools, enabled. It adds all or none: a duplicate name (with
// an existing tool or within tools) or an invalid name is an error.
func (r *Registry) Register(tools ...tool.Tool) error {
	r.mu.Lock()
	old := r.snap.Load()
	next := old.clone()
	names := make([]string, 0, len(tools))
	for _, t := range tools {
		def, full := headOf(t)
		if !ValidName(def.Name) {
			r.mu.Unlock()
			return fmt.Errorf("registry: invalid tool name %q: use 1-128 letters, digits, '_', '-' or '.'", def.Name)
		}
		if !def.Level.Valid() {
			r.mu.Unlock()
			return fmt.Errorf("registry: tool %q has invalid level %d (want 0-3)", def.Name, def.Level)
		}
		if _, dup := next.byName[def.Name]; dup {
			r.mu.Unlock()
			return fmt.Errorf("registry: duplicate tool name %q", def.Name)
		}
		next.byName[def.Name] = &entry{tool: t, head: def, def: full, enabled: true}
		next.order = append(next.order, def.Name)
		names = append(names, def.Name)
	}
	r.snap.Store(next)
	r.notifyLocked(Event{Kind: Added, Names: names})
	return nil
}

// headOf returns t's definition, or for a tool.Headed its head, with a
// function that returns the whole definition (on first use, once).
func headOf(t tool.Tool) (tool.Definition, func() tool.Definition) {
	if h, ok := t.(tool.Headed); ok {
		return h.Head(), sync.OnceValue(t.Definition)
	}
	def := t.Definition()
	return def, func() tool.Definition { return def }
}

// Unregister removes the named tools; unknown names are ignored.
func (r *Registry) Unregister(names ...string) {
	r.mu.Lock()
	next := r.snap.Load().clone()
	var removed []string
	for _, n := range names {
		if _, ok := next.byName[n]; ok {
			delete(next.byName, n)
			removed = append(removed, n)
		}
	}
	if len(removed) > 0 {
		order := next.order[:0]
		for _, n := range next.order {
			if _, ok := next.byName[n]; ok {
				order = append(order, n)
			}
		}
		next.order = order
		r.snap.Store(next)
	}
	r.notifyLocked(Event{Kind: Removed, Names: removed})
}

// Lookup returns the enabled tool of that name.
func (r *Registry) Lookup(name string) (tool.Tool, bool) {
	e, ok := r.snap.Load().byName[name]
	if !ok || !e.enabled {
		return nil, false
	}
	return e.tool, true
}

// Definition returns the definition of the enabled tool of that name, as it
// was when the tool was registered.
func (r *Registry) Definition(name string) (tool.Definition, bool) {
	e, ok := r.snap.Load().byName[name]
	if !ok || !e.enabled {
		return tool.Definition{}, false
	}
	return e.def(), true
}

// Filter selects tools for List.
type Filter struct {
	Tags     []string // only tools carrying at least one of these tags (none: all)
	Disabled bool     // include disabled tools
}

// List returns the definitions of the tools that pass f, in registration
// order.
func (r *Registry) List(f Filter) []tool.Definition {
	s := r.snap.Load()
	out := make([]tool.Definition, 0, len(s.order))
	for _, n := range s.order {
		e := s.byName[n]
		if !e.enabled && !f.Disabled {
			continue
		}
		if len(f.Tags) > 0 && !hasAny(e.head, f.Tags) {
			continue
		}
		out = append(out, e.def())
	}
	return out
}

// Names returns the names of all enabled tools, in registration order.
func (r *Registry) Names() []string {
	s := r.snap.Load()
	out := make([]string, 0, len(s.order))
	for _, n := range s.order {
		if s.byName[n].enabled {
			out = append(out, n)
		}
	}
	return out
}

// Tags returns every tag in use with the number of tools carrying it, sorted
// by tag.
func (r *Registry) Tags() []TagCount {
	counts := map[string]int{}
	s := r.snap.Load()
	for _, n := range s.order {
		for _, t := range s.byName[n].head.Tags {
			counts[t]++
		}
	}
	out := make([]TagCount, 0, len(counts))
	for t, c := range counts {
		out = append(out, TagCount{t, c})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Tag < out[j].Tag })
	return out
}

// TagCount is a tag and how many tools carry it.
type TagCount struct {
	Tag   string
	Count int
}

// Enable enables the named tools; it fails, changing nothing, if a name is unknown.
func (r *Registry) Enable(names ...string) error { return r.setEnabled(names, true) }

// Disable disables the named tools; it fails, changing nothing, if a name is unknown.
// A disabled tool is neither listed nor callable.
func (r *Registry) Disable(names ...string) error { return r.setEnabled(names, false) }

// SetTagEnabled enables or disables every tool carrying tag (a whole tool set).
func (r *Registry) SetTagEnabled(tag string, enabled bool) error {
	var names []string
	for _, d := range r.List(Filter{Tags: []string{tag}, Disabled: true}) {
		names = append(names, d.Name)
	}
	return r.setEnabled(names, enabled)
}

func (r *Registry) setEnabled(names []string, enabled bool) error {
	r.mu.Lock()
	next := r.snap.Load().clone()
	var changed []string
	for _, n := range names {
		e, ok := next.byName[n]
		if !ok {
			r.mu.Unlock()
			return fmt.Errorf("registry: no tool named %q", n)
		}
		if e.enabled != enabled {
			c := *e
			c.enabled = enabled
			next.byName[n] = &c
			changed = append(changed, n)
		}
	}
	if len(changed) > 0 {
		r.snap.Store(next)
	}
	kind := Disabled
	if enabled {
		kind = Enabled
	}
	r.notifyLocked(Event{Kind: kind, Names: changed})
	return nil
}

// Subscribe calls fn after every change, with the registry's lock released
// and in the order the changes happened. It returns a function that ends the
// subscription. fn must not block for long.
func (r *Registry) Subscribe(fn func(Event)) (cancel func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := r.nextID
	r.nextID++
	r.subs[id] = fn
	return func() {
		r.mu.Lock()
		delete(r.subs, id)
		r.mu.Unlock()
	}
}

// notifyLocked delivers ev to subscribers and releases r.mu. Holding a
// delivery lock while calling keeps events in order without holding r.mu.
func (r *Registry) notifyLocked(ev Event) {
	if len(ev.Names) == 0 || len(r.subs) == 0 {
		r.mu.Unlock()
		return
	}
	subs := make([]func(Event), 0, len(r.subs))
	for _, fn := range r.subs {
		subs = append(subs, fn)
	}
	r.deliver.Lock()
	r.mu.Unlock()
	defer r.deliver.Unlock()
	for _, fn := range subs {
		fn(ev)
	}
}

func (s *snapshot) clone() *snapshot {
	c := &snapshot{order: append([]string(nil), s.order...), byName: make(map[string]*entry, len(s.byName))}
	for k, v := range s.byName {
		c.byName[k] = v
	}
	return c
}

func hasAny(d tool.Definition, tags []string) bool {
	for _, t := range tags {
		if d.HasTag(t) {
			return true
		}
	}
	return false
}
