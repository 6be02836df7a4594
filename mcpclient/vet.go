package mcpclient

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/tool"
)

// Vetter judges the upstreams' tools before a Gateway offers them
// (toolgate proxy: pins and the poisoning scan of package trust). The
// gateway asks it about every upstream's tools whenever one of them lists
// its tools (at start, after tools/list_changed, after a reconnect) and on
// Refresh.
type Vetter interface {
	// Vet returns a Verdict per upstream name and upstream tool name. A
	// tool it says nothing about is hidden; an error hides every tool
	// (nothing is offered unvetted).
	Vet(ctx context.Context, listings []Listing) (map[string]map[string]Verdict, error)
}

// RefusalRecorder is a Vetter that is told of each call of a tool it hid
// (the gateway refused it), e.g. to audit it: a model that calls a tool it
// was not shown may be following injected instructions.
type RefusalRecorder interface {
	Refused(ctx context.Context, upstream, remote string, args json.RawMessage, refusal *tool.Error)
}

// Listing is one upstream's tools as it listed them (those Config.Tools
// and Exclude keep), before they are renamed, described or sanitised.
type Listing struct {
	Upstream Config
	Tools    []*mcp.Tool
}

// Treatment is what the gateway does with a vetted tool.
type Treatment int

const (
	// Offer lists the tool and lets its calls run (the engine still
	// governs them).
	Offer Treatment = iota
	// AskFirst lists the tool; each call asks a person first, through the
	// engine's approver (tool.NeedsApproval), saying Reason.
	AskFirst
	// Hide leaves the tool out of the list; a call by its name gets
	// Refusal (a tool error, not a protocol error).
	Hide
)

// Verdict is what the Vetter says of one tool.
type Verdict struct {
	Treatment Treatment
	Reason    string      // why it is asked about or hidden
	Refusal   *tool.Error // the answer to a call of a hidden tool (nil: permission_denied with Reason)
}

// sourced is a registered upstream tool with the definition the upstream
// listed, which the Vetter judges.
type sourced struct {
	tool.Tool
	src *mcp.Tool
}

// hiddenTool is a tool the Vetter hides.
type hiddenTool struct {
	u       *Upstream
	remote  string // the upstream's name of the tool
	refusal *tool.Error
}

// asking runs its tool only once a person approved the call.
type asking struct {
	tool.Tool
	reason string
}

func (a *asking) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	if !tool.Approved(ctx) {
		return tool.ErrorResult(tool.NeedsApproval(a.reason)), nil
	}
	return a.Tool.Run(ctx, call)
}

// vetLocked asks the Vetter about every upstream's tools (g.mu held); nil
// without a Vetter.
func (g *Gateway) vetLocked() map[string]map[string]Verdict {
	if g.vetter == nil {
		return nil
	}
	var ls []Listing
	for _, u := range g.ups {
		u.mu.Lock()
		listed := u.listed
		u.mu.Unlock()
		if !listed {
			continue // waiting for a sign-in: judged at its first listing, not pinned empty now
		}
		l := Listing{Upstream: u.cfg}
		for _, t := range u.Tools() {
			if s, ok := t.(*sourced); ok {
				l.Tools = append(l.Tools, s.src)
			}
		}
		ls = append(ls, l)
	}
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	v, err := g.vetter.Vet(ctx, ls)
	if err != nil {
		g.log.Error("vetting the upstream tools failed: every upstream tool is hidden", "err", err)
		refusal := tool.Errorf(tool.PermissionDenied, "the gateway could not vet the upstream tools: %v", err).
			WithSuggestion("tell the user: the gateway's pin file or trust settings need attention; do not retry")
		v = map[string]map[string]Verdict{}
		for _, l := range ls {
			v[l.Upstream.Name] = map[string]Verdict{}
			for _, t := range l.Tools {
				v[l.Upstream.Name][t.Name] = Verdict{Treatment: Hide, Reason: err.Error(), Refusal: refusal}
			}
		}
	}
	return v
}

// vetted returns the tool to register for t and its treatment's
// fingerprint, or nil and the refusal when it is hidden.
func vetted(t tool.Tool, verdicts map[string]Verdict, vetting bool) (tool.Tool, string, *tool.Error) {
	if !vetting {
		return t, "", nil
	}
	var v Verdict
	found := false
	if s, ok := t.(*sourced); ok {
		v, found = verdicts[s.src.Name]
	}
	if !found {
		v = Verdict{Treatment: Hide, Reason: "the tool was not vetted"}
	}
	switch v.Treatment {
	case Offer:
		return t, "offer", nil
	case AskFirst:
		return &asking{Tool: t, reason: v.Reason}, "ask:" + v.Reason, nil
	}
	if v.Refusal != nil {
		return nil, "", v.Refusal
	}
	return nil, "", tool.Errorf(tool.PermissionDenied, "%s is not offered: %s", t.Definition().Name, v.Reason).
		WithSuggestion("do not retry; tell the user the tool is held back and why")
}

// refuseHidden answers a tools/call of a hidden tool with its refusal,
// as a tool error the model can read.
func (g *Gateway) refuseHidden(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		r, ok := req.(*mcp.CallToolRequest)
		if !ok || r.Params == nil {
			return next(ctx, method, req)
		}
		g.mu.Lock()
		h := g.hidden[r.Params.Name]
		g.mu.Unlock()
		refusal := h.refusal
		if refusal == nil {
			return next(ctx, method, req)
		}
		g.log.Warn("call of a hidden upstream tool refused", "tool", r.Params.Name, "why", refusal.Message)
		if rr, ok := g.vetter.(RefusalRecorder); ok {
			rr.Refused(ctx, h.u.cfg.Name, h.remote, r.Params.Arguments, refusal)
		}
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: refusal.Text()}}, StructuredContent: refusal}, nil
	}
}

// Refresh asks the Vetter again about every upstream's tools and updates
// the registry (call it when its judgement may have changed: an approval
// in the pin file).
func (g *Gateway) Refresh() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	v := g.vetLocked()
	var errs []error
	for _, u := range g.ups {
		errs = append(errs, g.syncLocked(u, v[u.cfg.Name]))
	}
	return errors.Join(errs...)
}
