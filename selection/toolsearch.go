package selection

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tool"
)

// ToolSearchName is the name of the tool search meta-tool.
const ToolSearchName = "tool_search"

// DeferOptions configure Defer.
type DeferOptions struct {
	// Keep names tools that stay loaded (sent to the model) from the
	// start; tool_search itself always does.
	Keep []string
	// Limit is how many tools one search loads by default (the model may
	// ask for up to MaxLimit); 0: 5.
	Limit int
	// MaxLimit bounds what a model may ask for; 0: 20.
	MaxLimit int
	// Index configures the lexical index over the deferred tools.
	Index Options
	// Visible, when set, says whether a caller may be shown a tool
	// (engine.Engine.Visible): tool_search neither finds nor loads the
	// others for it.
	Visible func(tool.Definition, tool.Call) bool
	// Learn, when set, makes tool_search learn from use: which tool a
	// caller called after a search (see Observe); nil: it ranks by text.
	Learn *Learning
}

// Deferred is a set of tools that are registered but not sent to the
// model: they are disabled in the registry (so neither listed nor callable)
// until the tool_search meta-tool finds them, and then enabled ("loaded"),
// which a registry subscriber such as an MCP server announces as
// tools/list_changed. This is the pattern of Anthropic's and OpenAI's tool
// search: a catalogue too large for a context window stays out of it
// until a query needs part of it.
//
// Only tools that Defer (or Refresh) disabled can be loaded: a tool
// disabled for another reason stays disabled. Loading is per registry, so
// every session served from the registry sees what any session loaded;
// that is exact for stdio (one client) and a shared catalogue otherwise.
// Whether a loaded tool may run is still the policy's decision, call by
// call.
type Deferred struct {
	reg  *registry.Registry
	opts DeferOptions
	keep map[string]bool

	mu       sync.Mutex
	deferred map[string]bool // disabled by us and not loaded yet
	known    map[string]bool // every tool ever deferred, loaded or not
	idx      *Index
	defs     []tool.Definition
	dirty    atomic.Bool // set by the registry subscriber, which must never wait for mu
	cancel   func()
	learn    *learner // nil: no learning
	learned  *Learned
}

// Defer disables every enabled tool of reg except those in o.Keep (and
// tool_search) and returns the set, whose Tool is the tool_search to
// register. Tools registered later are not deferred until Refresh is
// called.
func Defer(reg *registry.Registry, o DeferOptions) (*Deferred, error) {
	if o.Limit <= 0 {
		o.Limit = 5
	}
	if o.MaxLimit <= 0 {
		o.MaxLimit = 20
	}
	d := &Deferred{reg: reg, opts: o, keep: map[string]bool{ToolSearchName: true},
		deferred: map[string]bool{}, known: map[string]bool{}}
	d.dirty.Store(true)
	for _, n := range o.Keep {
		d.keep[n] = true
	}
	if o.Learn != nil {
		cfg := *o.Learn
		if cfg.Log == nil {
			cfg.Log = &MemoryUsage{}
		}
		d.learn = &learner{cfg: cfg, pending: map[caller]*pendingSearch{}}
	}
	// Definitions may change as tools come and go: rebuild the index lazily.
	d.cancel = reg.Subscribe(func(ev registry.Event) {
		if ev.Kind == registry.Added || ev.Kind == registry.Removed {
			d.dirty.Store(true)
		}
	})
	if err := d.Refresh(); err != nil {
		d.cancel()
		return nil, err
	}
	return d, nil
}

// Refresh defers the enabled tools that are neither kept nor loaded by a
// search, e.g. tools registered after Defer.
func (d *Deferred) Refresh() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var names []string
	for _, def := range d.reg.List(registry.Filter{}) {
		if !d.keep[def.Name] && !d.known[def.Name] {
			names = append(names, def.Name)
		}
	}
	if err := d.reg.Disable(names...); err != nil {
		return err
	}
	for _, n := range names {
		d.deferred[n], d.known[n] = true, true
	}
	d.dirty.Store(true)
	return nil
}

// Close ends the subscription to the registry; the tools stay as they are.
func (d *Deferred) Close() { d.cancel() }

// Pending returns the names of the deferred tools not loaded yet, sorted.
func (d *Deferred) Pending() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]string, 0, len(d.deferred))
	for n := range d.deferred {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Search returns up to k deferred tools (loaded or not) that match query,
// best first, without loading them.
func (d *Deferred) Search(query string, k int) []tool.Definition {
	return d.search(context.Background(), query, k, nil)
}

// search is Search for call's caller: only the tools Visible admits, and
// with what use taught (but not for the tools Learning.Boost refuses).
func (d *Deferred) search(ctx context.Context, query string, k int, call *tool.Call) []tool.Definition {
	d.mu.Lock()
	defer d.mu.Unlock()
	rebuilt := false
	if d.dirty.Swap(false) || d.idx == nil {
		d.defs = d.defs[:0]
		for _, def := range d.reg.List(registry.Filter{Disabled: true}) {
			if d.known[def.Name] {
				d.defs = append(d.defs, def)
			}
		}
		d.idx = New(d.defs, d.opts.Index)
		rebuilt = true
	}
	if l := d.learn; l != nil {
		l.mu.Lock()
		l.refresh(ctx)
		if l.fresh || rebuilt {
			d.learned = d.idx.Learn(d.defs, l.records, l.cfg.Options)
			l.fresh = false
		}
		l.mu.Unlock()
	}
	var keep func(tool.Definition) bool
	if v := d.opts.Visible; v != nil && call != nil {
		keep = func(def tool.Definition) bool { return v(def, *call) }
	}
	var boost func(tool.Definition) bool
	if l := d.learn; l != nil && l.cfg.Boost != nil && call != nil {
		boost = func(def tool.Definition) bool { return l.cfg.Boost(def, *call) }
	}
	n := k
	if keep != nil || boost != nil {
		n = len(d.defs)
	}
	var ms []Match
	if boost == nil {
		ms = d.idx.SelectLearned(query, n, d.learned)
	} else {
		// A tool that may not be boosted for this caller keeps its text score.
		ex := d.idx.Explain(query, n, d.learned)
		ms = make([]Match, 0, len(ex))
		for _, e := range ex {
			m := e.Match
			if e.Use != 0 && !boost(d.defs[m.Index]) {
				if m.Score = e.Text; m.Score <= 0 {
					continue // found by use alone
				}
			}
			ms = append(ms, m)
		}
		slices.SortFunc(ms, better)
	}
	var out []tool.Definition
	for _, m := range ms {
		if def := d.defs[m.Index]; keep == nil || keep(def) {
			if out = append(out, def); len(out) == k {
				break
			}
		}
	}
	return out
}

// Load enables deferred tools; names that are not deferred (unknown, kept,
// already loaded, or disabled by someone else) are ignored. It returns the
// names it loaded.
func (d *Deferred) Load(names ...string) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var load []string
	for _, n := range names {
		if d.deferred[n] {
			load = append(load, n)
		}
	}
	if len(load) == 0 {
		return nil, nil
	}
	if err := d.reg.Enable(load...); err != nil {
		return nil, err
	}
	for _, n := range load {
		delete(d.deferred, n)
	}
	return load, nil
}

// Tool returns the tool_search meta-tool over d.
func (d *Deferred) Tool() tool.Tool { return &toolSearch{d: d} }

type toolSearch struct{ d *Deferred }

type toolSearchIn struct {
	Query string `json:"query"`
	Limit int    `json:"limit,omitempty"`
}

func (t *toolSearch) Definition() tool.Definition {
	schema := fmt.Sprintf(`{"type":"object","properties":{
"query":{"type":"string","minLength":1,"description":"what you need to do, in a few words (e.g. \"resize an image\", \"create a GitHub issue\")"},
"limit":{"type":"integer","minimum":1,"maximum":%d,"default":%d,"description":"how many tools to load at most"}},
"required":["query"],"additionalProperties":false}`, t.d.opts.MaxLimit, t.d.opts.Limit)
	return tool.Definition{
		Name:  ToolSearchName,
		Title: "Find and load tools",
		Description: "Search the catalogue of tools that are available but not loaded yet, and load the best matches: " +
			"they become callable right away (your tool list is updated). Use it whenever no loaded tool fits the task; " +
			"describe the action and its object in a few words. Returns each loaded tool's name, description and input schema.",
		InputSchema: json.RawMessage(schema),
		Annotations: tool.Annotations{ReadOnly: true, Idempotent: true},
		Level:       tool.LevelRead,
		Tags:        []string{"meta"},
	}
}

// foundTool is a definition as the model needs it to call the tool.
type foundTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

func (t *toolSearch) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	var in toolSearchIn
	if err := json.Unmarshal(call.Args, &in); err != nil {
		return tool.Result{}, tool.Errorf(tool.InvalidArguments, "arguments: %v", err)
	}
	if strings.TrimSpace(in.Query) == "" {
		return tool.Result{}, tool.Errorf(tool.InvalidArguments, "the query is empty").WithSuggestion("describe the action you need, e.g. \"convert a PDF to text\"")
	}
	k := in.Limit
	if k <= 0 {
		k = t.d.opts.Limit
	}
	k = min(k, t.d.opts.MaxLimit)
	defs := t.d.search(ctx, in.Query, k, &call)
	if l := t.d.learn; l != nil {
		ranked := make([]string, len(defs))
		for i, def := range defs {
			ranked[i] = def.Name
		}
		l.searched(caller{call.Principal, call.Session}, ranked)
	}
	if len(defs) == 0 {
		return tool.Result{}, tool.Errorf(tool.NotFound, "no tool in the catalogue matches %q", in.Query).
			WithSuggestion("try other words for the action or its object (synonyms, the service's name), or do without")
	}
	names := make([]string, len(defs))
	found := make([]foundTool, len(defs))
	for i, def := range defs {
		names[i] = def.Name
		found[i] = foundTool{def.Name, def.Description, def.InputSchema}
	}
	loaded, err := t.d.Load(names...)
	if err != nil {
		return tool.Result{}, tool.Errorf(tool.Internal, "loading the tools: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d tool(s) match %q and are loaded; call them by name:\n", len(defs), in.Query)
	for _, f := range found {
		schema, _ := json.Marshal(f.InputSchema)
		fmt.Fprintf(&b, "\n- %s: %s\n  input schema: %s\n", f.Name, firstParagraph(f.Description), schema)
	}
	return tool.Result{
		Content:    []tool.Content{tool.TextContent(b.String())},
		Structured: map[string]any{"tools": found, "loaded": loaded},
	}, nil
}

// firstParagraph keeps a description short in a listing.
func firstParagraph(s string) string {
	if i := strings.Index(s, "\n\n"); i >= 0 {
		s = s[:i]
	}
	if len(s) > 600 {
		s = s[:600] + "…"
	}
	return s
}
