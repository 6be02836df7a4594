package mcpclient

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tool"
)

// Gateway joins upstreams into one registry and one go-sdk server: their
// tools in the registry (followed as they change), their resources,
// resource templates and prompts on the server (see Mount). It is safe for
// concurrent use.
type Gateway struct {
	reg *registry.Registry
	ups []*Upstream
	log *slog.Logger

	mu     sync.Mutex
	tools  map[*Upstream]map[string]string // registered name → fingerprint
	vetter Vetter                          // nil: every tool offered
	hidden map[string]hiddenTool           // local name of a hidden tool → its upstream and the answer to its calls

	smu       sync.Mutex // the server side: resources, prompts, subscriptions
	srv       *mcp.Server
	resources map[string]*Upstream // URI → owner
	templates map[string]*Upstream // URI template → owner
	prompts   map[string]promptRef // local name → owner
	subs      map[string]int       // URI → downstream subscriptions
}

type promptRef struct {
	u      *Upstream
	remote string
}

// parallelStarts is how many upstreams NewGateway starts at once.
const parallelStarts = 4

// NewGateway connects to every upstream and registers their tools in reg.
// It fails, closing what it opened, when an upstream cannot be reached
// (the error names each that could not) or two tools would have one name.
// The upstreams start side by side, up to parallelStarts at once; their
// tools are registered in the order of cfgs.
func NewGateway(ctx context.Context, reg *registry.Registry, o Options, cfgs ...Config) (*Gateway, error) {
	g := &Gateway{reg: reg, log: o.Logger, tools: map[*Upstream]map[string]string{}, vetter: o.Vetter, hidden: map[string]hiddenTool{},
		resources: map[string]*Upstream{}, templates: map[string]*Upstream{}, prompts: map[string]promptRef{}, subs: map[string]int{}}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	if len(cfgs) == 0 {
		return nil, errors.New("mcpclient: a gateway needs at least one upstream")
	}
	names := map[string]bool{}
	for _, c := range cfgs {
		if names[c.Name] {
			return nil, fmt.Errorf("mcpclient: two upstreams are named %q", c.Name)
		}
		names[c.Name] = true
	}
	for _, c := range cfgs {
		u, err := newUpstream(c, o)
		if err != nil {
			return nil, err
		}
		u.onChange = func(k changeKind) { g.changed(u, k) }
		u.onResourceUpdated = g.resourceUpdated
		g.ups = append(g.ups, u)
	}
	// Started side by side (most of a start is waiting for a process or a
	// server), a few at a time. The first failure stops the starts under
	// way and those not begun (they are not reported: cut short), and
	// closes them all; each upstream that failed by itself is reported.
	starting, stop := context.WithCancel(ctx)
	defer stop()
	errs := make([]error, len(g.ups))
	slots := make(chan struct{}, parallelStarts)
	var wg sync.WaitGroup
	for i, u := range g.ups {
		wg.Go(func() {
			select {
			case slots <- struct{}{}:
			case <-starting.Done():
				return
			}
			defer func() { <-slots }()
			if starting.Err() != nil {
				return
			}
			if err := u.start(starting); err != nil {
				var te *tool.Error
				if !o.WaitForSignIn || !errors.As(err, &te) || te.Type != tool.AuthRequired {
					if !errors.Is(err, context.Canceled) || ctx.Err() != nil {
						errs[i] = err
					}
					stop()
					return
				}
				g.log.Warn("upstream waits for a sign-in: its tools are registered once it connects", "upstream", u.cfg.Name, "err", te.Message)
				go u.awaitSignIn(o.SignInPoll)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil || starting.Err() != nil {
		g.Close()
		return nil, cmp.Or(err, context.Cause(starting))
	}
	// Registered once all are listed: the Vetter judges each upstream's
	// tools beside all the others.
	if err := g.Refresh(); err != nil {
		g.Close()
		return nil, err
	}
	return g, nil
}

// Upstreams returns the gateway's upstreams in configuration order.
func (g *Gateway) Upstreams() []*Upstream { return append([]*Upstream(nil), g.ups...) }

// Close disconnects every upstream (stopping command upstreams). Their
// tools stay registered and fail as unavailable.
func (g *Gateway) Close() error {
	var errs []error
	for _, u := range g.ups {
		errs = append(errs, u.Close())
	}
	return errors.Join(errs...)
}

// changed follows an upstream's change.
func (g *Gateway) changed(u *Upstream, k changeKind) {
	switch k {
	case changedTools:
		if err := g.syncTools(u); err != nil {
			g.log.Warn("tools not all registered", "upstream", u.cfg.Name, "err", err)
		}
	case changedResources:
		go g.syncResources(u)
	case changedPrompts:
		go g.syncPrompts(u)
	case reconnected:
		if err := g.syncTools(u); err != nil {
			g.log.Warn("tools not all registered", "upstream", u.cfg.Name, "err", err)
		}
		go func() {
			g.syncResources(u)
			g.syncPrompts(u)
			g.resubscribe(u)
		}()
	}
}

// syncTools makes the registry hold u's current tools as the Vetter
// judges them (see syncLocked).
func (g *Gateway) syncTools(u *Upstream) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.syncLocked(u, g.vetLocked()[u.cfg.Name])
}

// syncLocked makes the registry hold u's current tools (g.mu held): tools
// gone, changed or now hidden are unregistered, new or changed ones
// registered, as verdicts say (without a Vetter, all). A name taken by
// another tool is an error (the tool is left out).
func (g *Gateway) syncLocked(u *Upstream, verdicts map[string]Verdict) error {
	old := g.tools[u]
	now := map[string]string{}
	var add []tool.Tool
	for name, h := range g.hidden {
		if h.u == u {
			delete(g.hidden, name)
		}
	}
	for _, t := range u.Tools() {
		def := t.Definition()
		remote := def.Name
		if s, ok := t.(*sourced); ok {
			remote = s.src.Name
		}
		t, treatment, refusal := vetted(t, verdicts, g.vetter != nil)
		if t == nil {
			g.hidden[def.Name] = hiddenTool{u, remote, refusal}
			continue
		}
		fp, _ := json.Marshal(def)
		now[def.Name] = treatment + string(fp)
		if old[def.Name] != now[def.Name] {
			add = append(add, t)
		}
	}
	var drop []string
	for name, fp := range old {
		if now[name] != fp {
			drop = append(drop, name)
		}
	}
	if len(drop) > 0 {
		g.reg.Unregister(drop...)
	}
	var errs []error
	for _, t := range add {
		name := t.Definition().Name
		err := g.reg.Register(t)
		if err != nil {
			delete(now, name)
			if other := g.toolOwner(name, u); other != nil {
				err = fmt.Errorf("upstream %s and upstream %s both give a tool named %s (after prefixing and renaming); rename one (tools.rename) or give them different prefixes", other.cfg.Name, u.cfg.Name, name)
			}
			errs = append(errs, fmt.Errorf("upstream %s: %w", u.cfg.Name, err))
		}
	}
	g.tools[u] = now
	return errors.Join(errs...)
}

// toolOwner returns the upstream other than u that registered tool name, or nil
// (g.mu held).
func (g *Gateway) toolOwner(name string, u *Upstream) *Upstream {
	for o, names := range g.tools {
		if _, ok := names[name]; ok && o != u {
			return o
		}
	}
	return nil
}

// ServerOptions returns go-sdk server options that forward completion and
// resource subscriptions to the upstreams (give them to the server that
// Mount is then called with).
func (g *Gateway) ServerOptions() *mcp.ServerOptions {
	o := &mcp.ServerOptions{}
	for _, u := range g.ups {
		caps := u.capabilities()
		if caps == nil {
			continue
		}
		if caps.Completions != nil && o.CompletionHandler == nil {
			o.CompletionHandler = g.complete
		}
		if caps.Resources != nil && caps.Resources.Subscribe && !u.cfg.NoResources && o.SubscribeHandler == nil {
			o.SubscribeHandler, o.UnsubscribeHandler = g.subscribe, g.unsubscribe
		}
	}
	return o
}

// capabilities are u's server capabilities, or nil.
func (u *Upstream) capabilities() *mcp.ServerCapabilities {
	if ir := u.InitializeResult(); ir != nil {
		return ir.Capabilities
	}
	return nil
}

// Mount offers the upstreams' resources, resource templates and prompts
// on s, and keeps them in step with the upstreams.
func (g *Gateway) Mount(s *mcp.Server) {
	g.smu.Lock()
	g.srv = s
	g.smu.Unlock()
	if g.vetter != nil {
		s.AddReceivingMiddleware(g.refuseHidden)
	}
	for _, u := range g.ups {
		g.syncResources(u)
		g.syncPrompts(u)
	}
}

// server returns the mounted server, or nil.
func (g *Gateway) server() *mcp.Server {
	g.smu.Lock()
	defer g.smu.Unlock()
	return g.srv
}

// syncResources lists u's resources and templates and offers them.
func (g *Gateway) syncResources(u *Upstream) {
	s := g.server()
	caps := u.capabilities()
	if s == nil || u.cfg.NoResources || caps == nil || caps.Resources == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	cs, err := u.Session(ctx)
	if err != nil {
		return
	}
	var rs []*mcp.Resource
	var ts []*mcp.ResourceTemplate
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			g.log.Warn("listing resources failed", "upstream", u.cfg.Name, "err", err)
			return
		}
		rs = append(rs, r)
	}
	for t, err := range cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			g.log.Warn("listing resource templates failed", "upstream", u.cfg.Name, "err", err)
			break
		}
		ts = append(ts, t)
	}
	read := func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		cs, err := u.Session(ctx)
		if err != nil {
			return nil, rpcError(err)
		}
		ctx, cancel := context.WithTimeout(ctx, u.cfg.Timeout)
		defer cancel()
		res, err := cs.ReadResource(ctx, req.Params)
		return res, rpcError(err)
	}

	g.smu.Lock()
	defer g.smu.Unlock()
	keep := map[string]bool{}
	for _, r := range rs {
		if owner, ok := g.resources[r.URI]; ok && owner != u {
			g.log.Warn("resource offered by two upstreams; the first keeps it", "uri", r.URI, "upstream", u.cfg.Name, "owner", owner.cfg.Name)
			continue
		}
		keep[r.URI] = true
		g.resources[r.URI] = u
		s.AddResource(r, read)
	}
	var gone []string
	for uri, owner := range g.resources {
		if owner == u && !keep[uri] {
			delete(g.resources, uri)
			gone = append(gone, uri)
		}
	}
	if len(gone) > 0 {
		s.RemoveResources(gone...)
	}
	keep = map[string]bool{}
	for _, t := range ts {
		if owner, ok := g.templates[t.URITemplate]; ok && owner != u {
			g.log.Warn("resource template offered by two upstreams; the first keeps it", "template", t.URITemplate, "upstream", u.cfg.Name)
			continue
		}
		if err := addTemplate(s, t, read); err != nil {
			g.log.Warn("resource template left out", "template", t.URITemplate, "upstream", u.cfg.Name, "err", err)
			continue
		}
		keep[t.URITemplate] = true
		g.templates[t.URITemplate] = u
	}
	gone = gone[:0]
	for tpl, owner := range g.templates {
		if owner == u && !keep[tpl] {
			delete(g.templates, tpl)
			gone = append(gone, tpl)
		}
	}
	if len(gone) > 0 {
		s.RemoveResourceTemplates(gone...)
	}
}

// addTemplate adds t, turning the go-sdk's panic on a bad template into an
// error.
func addTemplate(s *mcp.Server, t *mcp.ResourceTemplate, h mcp.ResourceHandler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	s.AddResourceTemplate(t, h)
	return nil
}

// syncPrompts lists u's prompts and offers them, prefixed.
func (g *Gateway) syncPrompts(u *Upstream) {
	s := g.server()
	caps := u.capabilities()
	if s == nil || u.cfg.NoPrompts || caps == nil || caps.Prompts == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	cs, err := u.Session(ctx)
	if err != nil {
		return
	}
	var ps []*mcp.Prompt
	for p, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			g.log.Warn("listing prompts failed", "upstream", u.cfg.Name, "err", err)
			return
		}
		ps = append(ps, p)
	}
	g.smu.Lock()
	defer g.smu.Unlock()
	keep := map[string]bool{}
	for _, p := range ps {
		local := u.cfg.name(p.Name)
		if ref, ok := g.prompts[local]; ok && ref.u != u {
			g.log.Warn("prompt name taken by another upstream", "prompt", local, "upstream", u.cfg.Name)
			continue
		}
		keep[local] = true
		g.prompts[local] = promptRef{u, p.Name}
		cp := *p
		cp.Name = local
		remote := p.Name
		s.AddPrompt(&cp, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			cs, err := u.Session(ctx)
			if err != nil {
				return nil, rpcError(err)
			}
			ctx, cancel := context.WithTimeout(ctx, u.cfg.Timeout)
			defer cancel()
			params := *req.Params
			params.Name = remote
			res, err := cs.GetPrompt(ctx, &params)
			return res, rpcError(err)
		})
	}
	var gone []string
	for local, ref := range g.prompts {
		if ref.u == u && !keep[local] {
			delete(g.prompts, local)
			gone = append(gone, local)
		}
	}
	if len(gone) > 0 {
		s.RemovePrompts(gone...)
	}
}

// complete forwards completion/complete to the upstream of the prompt or
// resource template named.
func (g *Gateway) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	empty := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}
	ref := req.Params.Ref
	if ref == nil {
		return empty, nil
	}
	params := *req.Params
	r := *ref
	params.Ref = &r
	var u *Upstream
	g.smu.Lock()
	switch ref.Type {
	case "ref/prompt":
		if p, ok := g.prompts[ref.Name]; ok {
			u, r.Name = p.u, p.remote
		}
	case "ref/resource":
		u = g.templates[ref.URI]
		if u == nil {
			u = g.resources[ref.URI]
		}
	}
	g.smu.Unlock()
	if u == nil {
		return empty, nil
	}
	if caps := u.capabilities(); caps == nil || caps.Completions == nil {
		return empty, nil
	}
	cs, err := u.Session(ctx)
	if err != nil {
		return nil, rpcError(err)
	}
	ctx, cancel := context.WithTimeout(ctx, u.cfg.Timeout)
	defer cancel()
	res, err := cs.Complete(ctx, &params)
	return res, rpcError(err)
}

// owner returns the upstream that serves uri: the one that listed it, else
// the only upstream that offers subscriptions.
func (g *Gateway) owner(uri string) *Upstream {
	g.smu.Lock()
	u := g.resources[uri]
	g.smu.Unlock()
	if u != nil {
		return u
	}
	var only *Upstream
	for _, c := range g.ups {
		if caps := c.capabilities(); caps != nil && caps.Resources != nil && caps.Resources.Subscribe && !c.cfg.NoResources {
			if only != nil {
				return nil
			}
			only = c
		}
	}
	return only
}

// subscribe forwards the first downstream subscription to a URI upstream.
func (g *Gateway) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	u := g.owner(uri)
	if u == nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("no upstream offers subscriptions to %q", uri)}
	}
	g.smu.Lock()
	g.subs[uri]++
	first := g.subs[uri] == 1
	g.smu.Unlock()
	if !first {
		return nil
	}
	cs, err := u.Session(ctx)
	if err == nil {
		err = cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
	}
	if err != nil {
		g.smu.Lock()
		g.subs[uri]--
		g.smu.Unlock()
	}
	return rpcError(err)
}

// unsubscribe forwards the last downstream unsubscription upstream.
func (g *Gateway) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	uri := req.Params.URI
	g.smu.Lock()
	last := g.subs[uri] == 1
	if g.subs[uri] > 0 {
		g.subs[uri]--
	}
	if g.subs[uri] == 0 {
		delete(g.subs, uri)
	}
	g.smu.Unlock()
	u := g.owner(uri)
	if !last || u == nil {
		return nil
	}
	cs, err := u.Session(ctx)
	if err == nil {
		err = cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	}
	return rpcError(err)
}

// resubscribe renews u's subscriptions after a reconnect.
func (g *Gateway) resubscribe(u *Upstream) {
	g.smu.Lock()
	var uris []string
	for uri := range g.subs {
		uris = append(uris, uri)
	}
	g.smu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	for _, uri := range uris {
		if g.owner(uri) != u {
			continue
		}
		if cs, err := u.Session(ctx); err == nil {
			cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
		}
	}
}

// resourceUpdated forwards notifications/resources/updated downstream.
func (g *Gateway) resourceUpdated(ctx context.Context, p *mcp.ResourceUpdatedNotificationParams) {
	if s := g.server(); s != nil {
		s.ResourceUpdated(ctx, p)
	}
}

// rpcError passes an upstream's JSON-RPC error on as it is; anything else
// becomes an internal error naming the cause.
func rpcError(err error) error {
	if err == nil {
		return nil
	}
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		return rpc
	}
	var te *tool.Error
	if errors.As(err, &te) {
		data, _ := json.Marshal(te)
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: te.Text(), Data: data}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}
