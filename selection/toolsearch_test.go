package selection_test

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/selection"
	"github.com/toolgate/toolgate/tool"
)

func echoTool(name, desc string) tool.Tool {
	return tool.Func(tool.Definition{Name: name, Description: desc, InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","description":"what to look for"}}}`)},
		func(context.Context, tool.Call) (tool.Result, error) { return tool.TextResult(name), nil })
}

func TestToolSearchLoadsDeferredTools(t *testing.T) {
	reg := registry.New()
	if err := reg.Register(
		echoTool("read_file", "Read a text file."),
		echoTool("create_issue", "Create an issue in a GitHub repository."),
		echoTool("resize_image", "Resize a picture to a given width and height."),
		echoTool("send_email", "Send an email message."),
	); err != nil {
		t.Fatal(err)
	}
	var events []registry.Event
	reg.Subscribe(func(ev registry.Event) { events = append(events, ev) })
	d, err := selection.Defer(reg, selection.DeferOptions{Keep: []string{"read_file"}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// Somebody else's disabled tool is never loaded by a search.
	if err := reg.Register(echoTool("delete_repository", "Delete a GitHub repository.")); err != nil {
		t.Fatal(err)
	}
	if err := reg.Disable("delete_repository"); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(d.Tool()); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(reg.Names(), ","); got != "read_file,tool_search" {
		t.Fatalf("listed before a search: %s", got)
	}
	if _, ok := reg.Lookup("create_issue"); ok {
		t.Fatal("a deferred tool must not be callable")
	}
	ts, _ := reg.Lookup("tool_search")
	res, err := ts.Run(context.Background(), tool.Call{Args: json.RawMessage(`{"query":"open a github issue","limit":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Text(), "create_issue") || !strings.Contains(res.Text(), `"q"`) {
		t.Errorf("result text:\n%s", res.Text())
	}
	if got := strings.Join(reg.Names(), ","); got != "read_file,create_issue,tool_search" {
		t.Errorf("listed after the search: %s", got)
	}
	if last := events[len(events)-1]; last.Kind != registry.Enabled || last.Names[0] != "create_issue" {
		t.Errorf("last event %+v, want create_issue enabled", last)
	}
	// A search may find the other disabled tool, but never loads it.
	ts.Run(context.Background(), tool.Call{Args: json.RawMessage(`{"query":"delete a github repository"}`)})
	if _, ok := reg.Lookup("delete_repository"); ok {
		t.Error("a tool disabled by someone else was loaded")
	}
	if _, err := ts.Run(context.Background(), tool.Call{Args: json.RawMessage(`{"query":"zzqx"}`)}); tool.AsError(err).Type != tool.NotFound {
		t.Errorf("no match: %v", err)
	}
	if got := d.Pending(); strings.Join(got, ",") != "resize_image,send_email" {
		t.Errorf("pending: %v", got)
	}
}

// fakeEmbeddings serves POST /v1/embeddings in OpenAI's documented wire
// format. A text's vector counts its words by concept: words of one
// concept (car, automobile, vehicle) share a dimension, others hash.
func fakeEmbeddings(t *testing.T, requests *atomic.Int32) *httptest.Server {
	concepts := map[string]int{"car": 0, "automobile": 0, "vehicle": 0, "rent": 1, "hire": 1, "lease": 1}
	const dim = 64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/embeddings" || r.Method != http.MethodPost || r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		requests.Add(1)
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "m" {
			http.Error(w, `{"error":{"message":"bad body"}}`, http.StatusBadRequest)
			return
		}
		type item struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		resp := struct {
			Object string `json:"object"`
			Data   []item `json:"data"`
			Model  string `json:"model"`
		}{Object: "list", Model: req.Model}
		for i := len(req.Input) - 1; i >= 0; i-- { // out of order on purpose: index says which
			v := make([]float32, dim)
			for _, w := range strings.FieldsFunc(strings.ToLower(req.Input[i]), func(r rune) bool { return !('a' <= r && r <= 'z') }) {
				if c, ok := concepts[w]; ok {
					v[c] += 3
					continue
				}
				h := fnv.New32a()
				h.Write([]byte(w))
				v[2+h.Sum32()%(dim-2)] += 0.2
			}
			resp.Data = append(resp.Data, item{"embedding", i, v})
		}
		json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestHybridWithEmbeddings(t *testing.T) {
	var requests atomic.Int32
	srv := fakeEmbeddings(t, &requests)
	defs := []tool.Definition{
		{Name: "book_car", Description: "Rent a car at an airport for some days.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "book_flight", Description: "Book a flight between two airports.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "weather", Description: "Weather forecast for a city.", InputSchema: json.RawMessage(`{"type":"object"}`)},
	}
	emb := &selection.Embedder{BaseURL: srv.URL + "/v1", Model: "m", APIKey: "k", CacheDir: t.TempDir(), Batch: 2}
	h, err := selection.NewHybrid(context.Background(), defs, selection.Options{}, emb)
	if err != nil {
		t.Fatal(err)
	}
	if n := requests.Load(); n != 2 {
		t.Errorf("%d requests for 3 definitions in batches of 2", n)
	}
	// The lexical index alone cannot know that an automobile is a car.
	if m := selection.New(defs, selection.Options{}).Select("hire an automobile", 3); len(m) != 0 {
		t.Errorf("lexical found %v", m)
	}
	got, err := h.Select(context.Background(), "hire an automobile", 3)
	if err != nil || len(got) == 0 || got[0].Name != "book_car" {
		t.Fatalf("hybrid: %v %v", got, err)
	}
	// Vectors are cached per definition: a rebuild asks only for the query.
	before := requests.Load()
	if _, err := selection.NewHybrid(context.Background(), defs, selection.Options{}, emb); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Select(context.Background(), "hire an automobile", 3); err != nil {
		t.Fatal(err)
	}
	if n := requests.Load() - before; n != 0 {
		t.Errorf("%d requests after caching", n)
	}
	// Endpoint errors are errors, with the server's message.
	bad := &selection.Embedder{BaseURL: srv.URL + "/v1", Model: "m", APIKey: "wrong"}
	if _, err := bad.Embed(context.Background(), []string{"x"}); err == nil || !strings.Contains(err.Error(), "bad request") {
		t.Errorf("bad key: %v", err)
	}
}

func TestGroupsLiftSiblings(t *testing.T) {
	defs := []tool.Definition{
		{Name: "browser_navigate", Description: "Open a web page in the browser."},
		{Name: "browser_click", Description: "Click an element."},
		{Name: "click_counter", Description: "Count clicks."},
		{Name: "weather", Description: "Weather forecast."},
	}
	groups := []string{"browser", "browser", "counter", ""}
	plain := selection.New(defs, selection.Options{}).Select("open the web page", 4)
	grouped := selection.New(defs, selection.Options{Groups: groups}).Select("open the web page", 4)
	if len(plain) != 1 {
		t.Errorf("without groups only the match is found: %v", plain)
	}
	if len(grouped) != 2 || grouped[0].Name != "browser_navigate" || grouped[1].Name != "browser_click" {
		t.Errorf("with groups the sibling follows the match: %v", grouped)
	}
	if off := selection.New(defs, selection.Options{Groups: groups, GroupWeight: -1}).Select("open the web page", 4); len(off) != 1 {
		t.Errorf("GroupWeight < 0 turns groups off: %v", off)
	}
}

// TestToolSearchLearns: a caller's search followed by its successful call
// teaches the next caller's search; a failed call teaches nothing; a tool
// Boost refuses ranks by its text alone.
func TestToolSearchLearns(t *testing.T) {
	reg := registry.New()
	if err := reg.Register(
		echoTool("get_forecast", "Weather forecast for a city."),
		echoTool("read_file", "Read a text file."),
		echoTool("send_email", "Send an email message."),
		echoTool("plan_trip", "Plan a trip: outside activities for a day."),
	); err != nil {
		t.Fatal(err)
	}
	var hits []selection.Hit
	boost := atomic.Bool{}
	boost.Store(true)
	log := &selection.MemoryUsage{}
	d, err := selection.Defer(reg, selection.DeferOptions{Learn: &selection.Learning{
		Log:   log,
		OnHit: func(h selection.Hit) { hits = append(hits, h) },
		Boost: func(def tool.Definition, _ tool.Call) bool { return boost.Load() || def.Name != "get_forecast" },
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ts := d.Tool()
	ctx := context.Background()
	search := func(principal, session, query string) string {
		t.Helper()
		args, _ := json.Marshal(map[string]any{"query": query, "limit": 2})
		call := tool.Call{Name: "tool_search", Args: args, Principal: principal, Session: session}
		res, err := ts.Run(ctx, call)
		if err != nil {
			t.Fatal(err)
		}
		d.Observe(ctx, selection.Observed{Principal: principal, Session: session, Tool: "tool_search", Arguments: args, OK: true})
		found := res.Structured.(map[string]any)["tools"]
		b, _ := json.Marshal(found)
		var names []struct{ Name string }
		json.Unmarshal(b, &names)
		return names[0].Name
	}
	const query = "is it going to rain outside tomorrow"
	if first := search("alice", "s1", query); first != "plan_trip" {
		t.Fatalf("the text alone ranks %s first; the test needs plan_trip", first)
	}
	// A failed call teaches nothing; then a successful one does.
	d.Observe(ctx, selection.Observed{Principal: "alice", Session: "s1", Tool: "get_forecast", OK: false})
	if first := search("bob", "s2", query); first != "plan_trip" {
		t.Fatalf("a failed call taught: %s first", first)
	}
	search("alice", "s1", query)
	d.Observe(ctx, selection.Observed{Principal: "alice", Session: "s1", Tool: "get_forecast", OK: true})
	if len(hits) != 1 || hits[0].Tool != "get_forecast" || hits[0].Rank != 0 || hits[0].Query != query || hits[0].Session != "s1" {
		t.Fatalf("hits %+v", hits)
	}
	if first := search("bob", "s2", query); first != "get_forecast" {
		t.Fatalf("bob's search after alice's use: %s first", first)
	}
	if u := d.Usage(); len(u) != 1 || u[0].Query != query || u[0].Principal != "alice" || u[0].Definition == "" {
		t.Fatalf("usage %+v", u)
	}
	boost.Store(false)
	if first := search("bob", "s2", query); first != "plan_trip" {
		t.Fatalf("a tool Boost refuses was boosted: %s first", first)
	}
}
