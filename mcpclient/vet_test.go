package mcpclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/mcpclient"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tool"
)

// listVetter judges tools by their upstream names: what is in ask asks,
// what is in hide (or not in known, when known is set) is hidden. It
// remembers what it was shown.
type listVetter struct {
	mu        sync.Mutex
	ask, hide []string
	known     []string // when not empty, other tools are hidden as new
	fail      error
	seen      [][]mcpclient.Listing
	refused   []string // upstream/remote args: message
}

func (v *listVetter) Refused(_ context.Context, upstream, remote string, args json.RawMessage, refusal *tool.Error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.refused = append(v.refused, upstream+"/"+remote+" "+string(args)+": "+refusal.Message)
}

func (v *listVetter) Vet(_ context.Context, ls []mcpclient.Listing) (map[string]map[string]mcpclient.Verdict, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.seen = append(v.seen, ls)
	if v.fail != nil {
		return nil, v.fail
	}
	out := map[string]map[string]mcpclient.Verdict{}
	for _, l := range ls {
		out[l.Upstream.Name] = map[string]mcpclient.Verdict{}
		for _, t := range l.Tools {
			switch {
			case slices.Contains(v.hide, t.Name):
				out[l.Upstream.Name][t.Name] = mcpclient.Verdict{Treatment: mcpclient.Hide, Reason: "held back",
					Refusal: tool.Errorf(tool.PermissionDenied, "%s is quarantined", t.Name).WithSuggestion("run toolgate trust diff")}
			case len(v.known) > 0 && !slices.Contains(v.known, t.Name):
				// no verdict: hidden
			case slices.Contains(v.ask, t.Name):
				out[l.Upstream.Name][t.Name] = mcpclient.Verdict{Treatment: mcpclient.AskFirst, Reason: t.Name + " changed"}
			default:
				out[l.Upstream.Name][t.Name] = mcpclient.Verdict{Treatment: mcpclient.Offer}
			}
		}
	}
	return out, nil
}

func (v *listVetter) set(fn func(v *listVetter)) {
	v.mu.Lock()
	fn(v)
	v.mu.Unlock()
}

func TestVetterDecidesWhatIsOffered(t *testing.T) {
	ctx := context.Background()
	v := &listVetter{ask: []string{"write stuff"}, hide: []string{"nuke"}}
	reg := registry.New()
	gw, err := mcpclient.NewGateway(ctx, reg, mcpclient.Options{Vetter: v}, stdio(t, "a"), stdio(t, "b"))
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()

	// The vetter saw both upstreams at once, with the upstream's own names.
	v.mu.Lock()
	first := v.seen[0]
	v.mu.Unlock()
	if len(first) != 2 || first[0].Upstream.Name != "a" || first[1].Upstream.Name != "b" {
		t.Fatalf("first vetting saw %d upstreams", len(first))
	}
	var names []string
	for _, tl := range first[0].Tools {
		names = append(names, tl.Name)
	}
	if !slices.Contains(names, "write stuff") || !slices.Contains(names, "echo") {
		t.Errorf("listing of a: %v", names)
	}

	for _, up := range []string{"a", "b"} {
		if _, ok := reg.Lookup(up + "__nuke"); ok {
			t.Errorf("%s__nuke is registered though hidden", up)
		}
		if _, ok := reg.Lookup(up + "__echo"); !ok {
			t.Errorf("%s__echo is not registered", up)
		}
	}
	// A tool that asks: refused with a request for approval, run once approved.
	ws, ok := reg.Lookup("a__write_stuff")
	if !ok {
		t.Fatal("a__write_stuff is not registered")
	}
	res := run(t, ws, `{}`)
	if !res.Error.AsksApproval() || res.Error.Details["reason"] != "write stuff changed" {
		t.Errorf("unapproved call: %+v", res.Error)
	}
	res, _ = ws.Run(tool.WithApproval(ctx), tool.Call{Name: "a__write_stuff", Args: json.RawMessage(`{}`)})
	if res.Error != nil || res.Text() != "written" {
		t.Errorf("approved call: %+v", res)
	}

	// Downstream, a call of the hidden tool by name is a tool error with
	// the vetter's refusal; other calls pass.
	srv := mcp.NewServer(&mcp.Implementation{Name: "gw"}, gw.ServerOptions())
	srv.AddTool(&mcp.Tool{Name: "a__echo", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("served"), nil
	})
	gw.Mount(srv)
	ct, st := mcp.NewInMemoryTransports()
	go srv.Run(ctx, st)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, name := range []string{"a__nuke", "b__nuke"} {
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"why": name}})
		if err != nil || !r.IsError {
			t.Fatalf("%s: %v %+v", name, err, r)
		}
		sc, _ := json.Marshal(r.StructuredContent)
		var e tool.Error
		json.Unmarshal(sc, &e)
		if e.Type != tool.PermissionDenied || e.Message != "nuke is quarantined" || e.Suggestion != "run toolgate trust diff" {
			t.Errorf("%s: %s", name, sc)
		}
	}
	v.mu.Lock()
	refused := v.refused
	v.mu.Unlock()
	if want := []string{`a/nuke {"why":"a__nuke"}: nuke is quarantined`, `b/nuke {"why":"b__nuke"}: nuke is quarantined`}; !slices.Equal(refused, want) {
		t.Errorf("refusals told to the vetter: %q, want %q", refused, want)
	}
	if r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "a__echo", Arguments: map[string]any{}}); err != nil || r.IsError {
		t.Errorf("a served tool: %v %+v", err, r)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "a__nothing", Arguments: map[string]any{}}); err == nil {
		t.Errorf("an unknown tool was answered as a tool")
	}

	// The vetter changes its mind: Refresh offers nuke, and hides echo.
	events := make(chan registry.Event, 16)
	cancel := reg.Subscribe(func(e registry.Event) { events <- e })
	defer cancel()
	v.set(func(v *listVetter) { v.hide, v.ask = []string{"echo"}, nil })
	if err := gw.Refresh(); err != nil {
		t.Fatal(err)
	}
	if _, ok := reg.Lookup("a__nuke"); !ok {
		t.Error("a__nuke not offered after Refresh")
	}
	if _, ok := reg.Lookup("a__echo"); ok {
		t.Error("a__echo still offered after Refresh")
	}
	if ws, _ := reg.Lookup("a__write_stuff"); run(t, ws, `{}`).Error != nil {
		t.Error("a__write_stuff still asks")
	}
	if len(events) == 0 {
		t.Error("no registry event")
	}
	if r, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: "a__nuke", Arguments: map[string]any{}}); r != nil && r.IsError {
		t.Errorf("a__nuke still refused as hidden: %+v", r)
	}

	// A vetter that fails hides everything.
	v.set(func(v *listVetter) { v.fail = errors.New("pin file damaged") })
	gw.Refresh()
	if n := len(reg.Names()); n != 0 {
		t.Errorf("%d tools offered while vetting fails: %v", n, reg.Names())
	}
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "b__echo", Arguments: map[string]any{}})
	if err != nil || !r.IsError {
		t.Errorf("a call while vetting fails: %v %+v", err, r)
	}
}

func TestVetterSeesToolsAddedMidSession(t *testing.T) {
	ctx := context.Background()
	v := &listVetter{}
	reg := registry.New()
	gw, err := mcpclient.NewGateway(ctx, reg, mcpclient.Options{Vetter: v}, stdio(t, "a"))
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	var known []string
	for _, n := range reg.Names() {
		known = append(known, n[len("a__"):])
	}
	known = append(known, "write stuff")
	v.set(func(v *listVetter) { v.known = known })
	changed := make(chan struct{}, 16)
	reg.Subscribe(func(registry.Event) { changed <- struct{}{} })
	grow, _ := reg.Lookup("a__grow")
	run(t, grow, `{}`) // the upstream adds "grown" and sends tools/list_changed
	deadline := time.After(10 * time.Second)
	for {
		v.mu.Lock()
		var sawGrown bool
		for _, ls := range v.seen {
			for _, tl := range ls[0].Tools {
				sawGrown = sawGrown || tl.Name == "grown"
			}
		}
		v.mu.Unlock()
		if sawGrown {
			break
		}
		select {
		case <-changed:
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatal("the vetter was not asked about the tool added mid-session")
		}
	}
	if _, ok := reg.Lookup("a__grown"); ok {
		t.Error("a__grown, which the vetter said nothing about, is offered")
	}
	if _, ok := reg.Lookup("a__echo"); !ok {
		t.Error("a__echo left after the change")
	}
}
