package sandboxes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/redistest"
	"github.com/toolgate/toolgate/mcpserver"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/runner"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/tool"
	"github.com/toolgate/toolgate/toolsets/fs"
)

var testSecret = []byte("sandboxes-test-secret-0123")

// testRunner is a real runner (package runner's HTTP front, each sandbox
// the file tools over its workspace through an ungoverned engine, served
// at its call endpoint and by a stateless mcpserver, as toolgate runner
// serves them) on a loopback port, which a test can stop and start again,
// on the same or another folder.
type testRunner struct {
	t    testing.TB
	addr string
	stop func() // stops serving, closes the runner
	r    *runner.Runner
}

// startTestRunner serves the runner as toolgate runner does (Serve: calls
// on the lean path).
func startTestRunner(t testing.TB, addr, dir string) *testRunner {
	t.Helper()
	return startWrappedRunner(t, addr, dir, nil)
}

// startWrappedRunner is startTestRunner with the runner's HTTP handler
// wrapped, served by net/http alone (nil wrap: Serve).
func startWrappedRunner(t testing.TB, addr, dir string, wrap func(http.Handler) http.Handler) *testRunner {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	r, err := runner.New(runner.Options{Dir: dir, Secret: testSecret, Open: func(id, ws string) (runner.Sandbox, error) {
		roots, err := fs.OpenRoots(ws)
		if err != nil {
			return runner.Sandbox{}, err
		}
		tools, err := fs.Tools(roots, fs.Options{})
		if err != nil {
			return runner.Sandbox{}, err
		}
		reg := registry.New()
		if err := reg.Register(append(tools, countTool)...); err != nil {
			return runner.Sandbox{}, err
		}
		eng := engine.New(engine.Options{Registry: reg, Policy: &policy.Policy{Mode: policy.ModeBypass, MaxLevel: tool.LevelHigh, Reasons: map[string]string{}}, MaxResultBytes: -1, Inline: true})
		srv, err := mcpserver.New(mcpserver.Options{Engine: eng, Roots: roots.Dirs(), NoPrompts: true, NoCallLog: true})
		if err != nil {
			return runner.Sandbox{}, err
		}
		return runner.Sandbox{MCP: srv.Handler(mcpserver.HTTPOptions{Loopback: true, Stateless: true}),
			Call: func(ctx context.Context, name string, args json.RawMessage) tool.Result {
				return eng.Execute(ctx, tool.Call{Name: name, Args: args})
			},
			Close: srv.Close}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	tr := &testRunner{t: t, addr: ln.Addr().String(), r: r}
	if wrap == nil {
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan struct{})
		go func() { r.Serve(ctx, ln); close(served) }()
		tr.stop = func() { cancel(); <-served; r.Close() }
	} else {
		srv := &http.Server{Handler: wrap(r.Handler())}
		go srv.Serve(ln)
		tr.stop = func() { srv.Close(); r.Close() }
	}
	t.Cleanup(func() { tr.stop() })
	return tr
}

func (tr *testRunner) url() string { return "http://" + tr.addr }

// replica is one gateway replica's Sandboxes over the runners, its state
// in Redis (rc) or its memory (rc nil).
func replica(t *testing.T, rc *redis.Client, o Options, urls ...string) *Sandboxes {
	t.Helper()
	b, err := NewRunners(urls, testSecret, nil)
	if err != nil {
		t.Fatal(err)
	}
	o.Backend, o.Secret = b, testSecret
	if rc != nil {
		o.State = store.NewRedisSandboxes(rc, "test:")
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func redisClient(t *testing.T) *redis.Client {
	srv := redistest.Start(t)
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rc.Close() })
	return rc
}

// tools forwards the file tools' definitions.
func toolsOf(t testing.TB, s *Sandboxes) map[string]tool.Tool {
	t.Helper()
	roots, err := fs.OpenRoots(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	local, err := fs.Tools(roots, fs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var defs []tool.Definition
	for _, tl := range local {
		defs = append(defs, tl.Definition())
	}
	out := map[string]tool.Tool{}
	for _, tl := range s.Tools(defs) {
		out[tl.Definition().Name] = tl
	}
	return out
}

func call(t *testing.T, tools map[string]tool.Tool, principal, conv, name, args string) tool.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := tools[name].Run(ctx, tool.Call{Name: name, Args: []byte(args), Principal: principal, Session: conv})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func sandboxMeta(res tool.Result) (string, bool) {
	m, _ := res.Meta[MetaSandbox].(map[string]any)
	id, _ := m["id"].(string)
	isNew, _ := m["new"].(bool)
	return id, isNew
}

// TestReplicas: a file written through one replica is read through the
// other; another principal or conversation with the same names does not
// reach it (not_found); the meta names the sandbox and says new once.
func TestReplicas(t *testing.T) {
	tr := startTestRunner(t, "", t.TempDir())
	rc := redisClient(t)
	a, b := toolsOf(t, replica(t, rc, Options{}, tr.url())), toolsOf(t, replica(t, rc, Options{}, tr.url()))

	res := call(t, a, "alice", "conversation:c1", "write_file", `{"path":"notes.txt","content":"hello"}`)
	if res.Error != nil {
		t.Fatalf("write_file: %v", res.Error)
	}
	if id, isNew := sandboxMeta(res); id != ID("alice", "conversation:c1") || !isNew {
		t.Errorf("first call's meta: %v", res.Meta)
	}
	if strings.Contains(res.Text(), "made anew") {
		t.Errorf("a first sandbox is said to be made anew: %s", res.Text())
	}
	res = call(t, b, "alice", "conversation:c1", "read_file", `{"path":"notes.txt"}`)
	if res.Error != nil || !strings.Contains(res.Text(), "hello") {
		t.Fatalf("read_file through the other replica: %v %s", res.Error, res.Text())
	}
	if _, isNew := sandboxMeta(res); isNew {
		t.Errorf("the second call says its sandbox is new")
	}
	if res.Meta["total_lines"] == nil { // the runner's meta comes back
		t.Errorf("read_file's meta from the sandbox is lost: %v", res.Meta)
	}
	for _, k := range [][2]string{{"bob", "conversation:c1"}, {"alice", "conversation:c2"}, {"alice", ""}} {
		res := call(t, b, k[0], k[1], "read_file", `{"path":"notes.txt"}`)
		if res.Error == nil || res.Error.Type != tool.NotFound {
			t.Errorf("%q reads alice's file: %v %s", k, res.Error, res.Text())
		}
	}
}

// TestRacingFirstCalls: many first calls of one key on two replicas make
// one sandbox; exactly one result says it was created.
func TestRacingFirstCalls(t *testing.T) {
	tr := startTestRunner(t, "", t.TempDir())
	rc := redisClient(t)
	reps := []map[string]tool.Tool{toolsOf(t, replica(t, rc, Options{}, tr.url())), toolsOf(t, replica(t, rc, Options{}, tr.url()))}
	var wg sync.WaitGroup
	var mu sync.Mutex
	created := 0
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := call(t, reps[i%2], "alice", "conversation:race", "list_directory", `{"path":"."}`)
			if res.Error != nil {
				t.Errorf("list_directory: %v", res.Error)
			}
			if _, isNew := sandboxMeta(res); isNew {
				mu.Lock()
				created++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	ids, _ := tr.r.List()
	if len(ids) != 1 || created != 1 {
		t.Errorf("%d sandboxes %v, %d results said new; want 1 and 1", len(ids), ids, created)
	}
}

// TestMaxAndReap: past max a new key is refused with rate_limited and a
// retry_after, an existing key's calls still run; Reap deletes the idle
// sandboxes once (one replica at a time), and the key's next call makes it
// anew and says so.
func TestMaxAndReap(t *testing.T) {
	tr := startTestRunner(t, "", t.TempDir())
	rc := redisClient(t)
	o := Options{Max: 1, Idle: 300 * time.Millisecond}
	sa, sb := replica(t, rc, o, tr.url()), replica(t, rc, o, tr.url())
	a, b := toolsOf(t, sa), toolsOf(t, sb)
	if res := call(t, a, "alice", "c1", "write_file", `{"path":"x","content":"1"}`); res.Error != nil {
		t.Fatal(res.Error)
	}
	res := call(t, b, "bob", "c1", "list_directory", `{"path":"."}`)
	if res.Error == nil || res.Error.Type != tool.RateLimited || res.Error.RetryAfter <= 0 {
		t.Fatalf("past max: %v", res.Error)
	}
	if res := call(t, b, "alice", "c1", "read_file", `{"path":"x"}`); res.Error != nil {
		t.Errorf("an existing sandbox past max: %v", res.Error)
	}
	time.Sleep(o.Idle + 100*time.Millisecond) // past idle: a lower bound, not a timing assertion
	release, _, _ := sb.o.State.Lock(context.Background(), "reaper", time.Minute)
	if got, err := sa.Reap(context.Background()); err != nil || len(got) != 0 {
		t.Errorf("Reap while another replica holds the lock: %v %v", got, err)
	}
	release()
	got, err := sa.Reap(context.Background())
	if err != nil || len(got) != 1 || got[0] != ID("alice", "c1") {
		t.Fatalf("Reap: %v %v", got, err)
	}
	if again, _ := sb.Reap(context.Background()); len(again) != 0 {
		t.Errorf("a second Reap deleted %v again", again)
	}
	if ids, _ := tr.r.List(); len(ids) != 0 {
		t.Errorf("after Reap the runner has %v", ids)
	}
	res = call(t, b, "alice", "c1", "read_file", `{"path":"x"}`)
	if res.Error == nil || res.Error.Type != tool.NotFound || !strings.Contains(res.Error.Message, "made anew") {
		t.Errorf("after Reap: %v", res.Error)
	}
	if _, isNew := sandboxMeta(res); !isNew {
		t.Errorf("after Reap the meta says not new: %v", res.Meta)
	}
}

// TestRunnerGone: a runner that stops answering makes a write unavailable
// (retryable, naming the sandbox, never saying it ran); a runner on a new
// folder at the same address then gives the key a new workspace, said so;
// a read meeting the broken connection is retried once on it.
func TestRunnerGone(t *testing.T) {
	tr := startTestRunner(t, "", t.TempDir())
	a := toolsOf(t, replica(t, nil, Options{}, tr.url()))
	id := ID("alice", "c1")
	if res := call(t, a, "alice", "c1", "write_file", `{"path":"x","content":"1"}`); res.Error != nil {
		t.Fatal(res.Error)
	}
	tr.stop()
	res := call(t, a, "alice", "c1", "write_file", `{"path":"y","content":"2"}`)
	// Whether it says "did not run" or "unknown" depends on whether the
	// request went out on a kept connection the runner had closed (its
	// message written, no answer: the gateway cannot tell) or on a new one
	// (refused): never that it ran, and it is never retried.
	if e := res.Error; e == nil || e.Type != tool.Unavailable || !e.Retryable || !strings.Contains(e.Message, id) ||
		!strings.Contains(e.Message, "did not run") && !strings.Contains(e.Message, "whether it ran is unknown") {
		t.Fatalf("runner gone: %v", res.Error)
	}
	startTestRunner(t, tr.addr, t.TempDir())
	res = call(t, a, "alice", "c1", "read_file", `{"path":"x"}`)
	if res.Error == nil || res.Error.Type != tool.NotFound || !strings.Contains(res.Error.Message, "made anew") {
		t.Fatalf("after the runner came back empty: %v", res.Error)
	}
	res = call(t, a, "alice", "c1", "write_file", `{"path":"x","content":"3"}`)
	if res.Error != nil || strings.Contains(res.Text(), "made anew") {
		t.Errorf("the call after: %v %s", res.Error, res.Text())
	}
}

// TestTokens: a gateway with another secret is refused by the runner:
// the call is unavailable and nothing is made.
func TestTokens(t *testing.T) {
	tr := startTestRunner(t, "", t.TempDir())
	b, _ := NewRunners([]string{tr.url()}, []byte("another-secret-0123456"), nil)
	s, err := New(Options{Backend: b, Secret: []byte("another-secret-0123456")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res := call(t, toolsOf(t, s), "alice", "c1", "list_directory", `{"path":"."}`)
	if res.Error == nil || res.Error.Type != tool.Unavailable {
		t.Errorf("another secret: %v", res.Error)
	}
	if ids, _ := tr.r.List(); len(ids) != 0 {
		t.Errorf("another secret made %v", ids)
	}
	if _, _, err := b.Ensure(context.Background(), "sb-x"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Ensure with another secret: %v", err)
	}
}

// TestAbsolutePaths: the gateway's path rules judge a path against the
// workspace; an absolute path inside it reaches the same file in the
// sandbox (sent relative), and one elsewhere (the runner's own folder, as
// a command's pwd shows it, or the host's) is refused before it leaves.
func TestAbsolutePaths(t *testing.T) {
	dir := t.TempDir()
	tr := startTestRunner(t, "", dir)
	tools := toolsOf(t, replica(t, redisClient(t), Options{Workspace: "/workspace", PathParams: policy.PathParams, PatchPaths: policy.PatchPaths}, tr.url()))
	const who, conv = "alice", "conversation:abs"
	if res := call(t, tools, who, conv, "write_file", `{"path":"/workspace/sub/notes.txt","content":"hello"}`); res.Error != nil {
		t.Fatalf("write_file under the workspace: %v", res.Error)
	}
	if res := call(t, tools, who, conv, "read_file", `{"path":"sub/notes.txt"}`); res.Error != nil || !strings.Contains(res.Text(), "hello") {
		t.Fatalf("read_file relative: %v %s", res.Error, res.Text())
	}
	if res := call(t, tools, who, conv, "list_directory", `{"path":"/workspace"}`); res.Error != nil || !strings.Contains(res.Text(), "sub") {
		t.Fatalf("list_directory of the workspace: %v %s", res.Error, res.Text())
	}
	real := filepath.Join(dir, ID(who, conv), "sub", "notes.txt")
	for _, p := range []string{real, "/etc/passwd", "/workspace/../etc/passwd", "/workspacefoo/x"} {
		res := call(t, tools, who, conv, "read_file", fmt.Sprintf(`{"path":%q}`, p))
		if res.Error == nil || res.Error.Type != tool.PermissionDenied {
			t.Errorf("read_file %s: %v %s, want permission_denied", p, res.Error, res.Text())
		}
	}
	// The same, its slashes escaped in the JSON (no '/' byte in it),
	// refused by the gateway.
	for _, args := range []string{`{"path":"\u002fetc\u002fpasswd"}`, `{"path":"\/etc\/passwd"}`} {
		if res := call(t, tools, who, conv, "read_file", args); res.Error == nil || res.Error.Type != tool.PermissionDenied || !strings.Contains(res.Error.Message, "outside the sandbox's workspace") {
			t.Errorf("read_file %s: %v %s, want permission_denied before it leaves", args, res.Error, res.Text())
		}
	}
}

// gatedRunners holds the reaper's delete until its gate opens.
type gatedRunners struct {
	*Runners
	deleting chan struct{}   // closed when a delete starts
	gate     <-chan struct{} // the delete goes on once it is closed
}

func (g *gatedRunners) deleteAt(ctx context.Context, id, endpoint string) (*runner.ProcessEvents, error) {
	close(g.deleting)
	<-g.gate
	return g.Runners.deleteAt(ctx, id, endpoint)
}

// refusedMap says when a lease was refused (another holds it).
type refusedMap struct {
	policy.SandboxMap
	once    sync.Once
	refused chan struct{}
}

func (m *refusedMap) Lock(ctx context.Context, name string, ttl time.Duration) (func(), bool, error) {
	release, ok, err := m.SandboxMap.Lock(ctx, name, ttl)
	if !ok && err == nil && strings.HasPrefix(name, "create:") {
		m.once.Do(func() { close(m.refused) })
	}
	return release, ok, err
}

// TestReapRaces (review finding 9): the reaper deletes under the sandbox's
// lease and only what is still idle. A call recorded after the reaper
// listed a sandbox keeps it; a call that comes while the reaper deletes
// waits for the lease and then makes the sandbox anew, and the map says it
// is live (the reaper's delete does not mark the new one gone).
func TestReapRaces(t *testing.T) {
	tr := startTestRunner(t, "", t.TempDir())
	rc := redisClient(t)
	o := Options{Idle: 300 * time.Millisecond}
	ra, rb := replica(t, rc, o, tr.url()), replica(t, rc, o, tr.url())
	a, b := toolsOf(t, ra), toolsOf(t, rb)
	id := ID("alice", "c1")
	if res := call(t, a, "alice", "c1", "write_file", `{"path":"x","content":"1"}`); res.Error != nil {
		t.Fatal(res.Error)
	}

	// Used after the reaper listed it: kept.
	time.Sleep(o.Idle + 100*time.Millisecond) // past idle: a lower bound
	before := time.Now().Add(-o.Idle)
	if idle, _ := ra.o.State.Idle(context.Background(), before); len(idle) != 1 {
		t.Fatalf("idle: %v", idle)
	}
	if res := call(t, b, "alice", "c1", "read_file", `{"path":"x"}`); res.Error != nil {
		t.Fatal(res.Error)
	}
	if gone, err := ra.reap(context.Background(), id, before); gone || err != nil {
		t.Fatalf("a sandbox used after it was listed was reaped: %v %v", gone, err)
	}
	if ids, _ := tr.r.List(); len(ids) != 1 {
		t.Fatalf("the runner has %v", ids)
	}

	// A call while the reaper deletes: it waits for the lease, then
	// makes the sandbox anew, and stays live.
	time.Sleep(o.Idle + 100*time.Millisecond)
	gate := make(chan struct{})
	g := &gatedRunners{Runners: ra.o.Backend.(*Runners), deleting: make(chan struct{}), gate: gate}
	ra.o.Backend = g
	m := &refusedMap{SandboxMap: rb.o.State, refused: make(chan struct{})}
	rb.o.State = m
	reaped := make(chan []string, 1)
	go func() {
		got, err := ra.Reap(context.Background())
		if err != nil {
			t.Error(err)
		}
		reaped <- got
	}()
	<-g.deleting
	res := make(chan tool.Result, 1)
	go func() { res <- call(t, b, "alice", "c1", "read_file", `{"path":"x"}`) }()
	select {
	case <-m.refused: // the call waits for the reaper's lease
	case <-time.After(10 * time.Second):
		t.Error("the call did not wait for the lease the reaper holds")
	}
	close(gate)
	if got := <-reaped; len(got) != 1 || got[0] != id {
		t.Fatalf("Reap: %v", got)
	}
	r := <-res
	if r.Error == nil || r.Error.Type != tool.NotFound || !strings.Contains(r.Error.Message, "made anew") {
		t.Fatalf("the call after the delete: %v", r.Error)
	}
	if e, ok, _ := rb.o.State.Get(context.Background(), id); !ok || e.Gone {
		t.Fatalf("the sandbox made anew is not live in the map: %+v", e)
	}
	if ids, _ := tr.r.List(); len(ids) != 1 {
		t.Fatalf("the runner has %v", ids)
	}
	if r := call(t, a, "alice", "c1", "list_directory", `{"path":"."}`); r.Error != nil || strings.Contains(toolText(r), "made anew") {
		t.Errorf("the next call: %v %q", r.Error, toolText(r))
	}
}

func toolText(r tool.Result) string {
	var sb strings.Builder
	for _, c := range r.Content {
		sb.WriteString(c.Text)
	}
	return sb.String()
}

// TestRunnerListChanged (review finding 9): a sandbox stays on the runner
// that made it when runners are added (its workspace is kept, and the
// reaper deletes it there, not where the new list would place it); when
// its runner leaves the list, the key's next call makes it anew on a
// listed runner, and nothing is sent to the one that left.
func TestRunnerListChanged(t *testing.T) {
	ta, tb := startTestRunner(t, "", t.TempDir()), startTestRunner(t, "", t.TempDir())
	rc := redisClient(t)
	o := Options{Idle: 300 * time.Millisecond}
	one := replica(t, rc, o, ta.url())
	two := replica(t, rc, o, ta.url(), tb.url())
	conv := ""
	for i := 0; conv == ""; i++ { // a conversation the two runners' list places on b
		if c := fmt.Sprint("c", i); two.o.Backend.(*Runners).place(ID("alice", c)) == tb.url() {
			conv = c
		}
	}
	id := ID("alice", conv)
	if res := call(t, toolsOf(t, one), "alice", conv, "write_file", `{"path":"x","content":"1"}`); res.Error != nil {
		t.Fatal(res.Error)
	}
	res := call(t, toolsOf(t, two), "alice", conv, "read_file", `{"path":"x"}`)
	if res.Error != nil {
		t.Fatalf("after a runner was added: %v", res.Error)
	}
	if _, isNew := sandboxMeta(res); isNew {
		t.Error("after a runner was added the sandbox was made anew")
	}
	if ids, _ := tb.r.List(); len(ids) != 0 {
		t.Errorf("the added runner has %v", ids)
	}
	time.Sleep(o.Idle + 100*time.Millisecond) // past idle: a lower bound
	if got, err := two.Reap(context.Background()); err != nil || len(got) != 1 || got[0] != id {
		t.Fatalf("Reap: %v %v", got, err)
	}
	if ids, _ := ta.r.List(); len(ids) != 0 {
		t.Errorf("the reaper left %v on the runner that made it", ids)
	}

	// Its runner leaves the list.
	if res := call(t, toolsOf(t, one), "alice", conv, "write_file", `{"path":"x","content":"2"}`); res.Error != nil {
		t.Fatal(res.Error)
	}
	onlyB := replica(t, rc, o, tb.url())
	res = call(t, toolsOf(t, onlyB), "alice", conv, "read_file", `{"path":"x"}`)
	if res.Error == nil || res.Error.Type != tool.NotFound || !strings.Contains(res.Error.Message, "made anew") {
		t.Fatalf("after its runner left the list: %v", res.Error)
	}
	if e, _, _ := onlyB.o.State.Get(context.Background(), id); !strings.HasPrefix(e.Endpoint, tb.url()+"/") {
		t.Errorf("the map names %s", e.Endpoint)
	}
	if ids, _ := ta.r.List(); len(ids) != 1 {
		t.Errorf("the runner that left the list has %v (nothing is sent to it)", ids)
	}
	time.Sleep(o.Idle + 100*time.Millisecond)
	if got, err := onlyB.Reap(context.Background()); err != nil || len(got) != 1 {
		t.Fatalf("Reap: %v %v", got, err)
	}
	if ids, _ := tb.r.List(); len(ids) != 0 {
		t.Errorf("the reaper left %v on the listed runner", ids)
	}
}

// connCounter counts the connections a client opens.
type connCounter struct {
	mu    sync.Mutex
	fresh int
}

func (c *connCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.WithContext(httptrace.WithClientTrace(r.Context(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		if !i.Reused {
			c.mu.Lock()
			c.fresh++
			c.mu.Unlock()
		}
	}}))
	return http.DefaultTransport.RoundTrip(r)
}

// TestConnectionKept: a sandbox's calls share one connection, through the
// hop (dialling with the client's Transport's DialContext) and through
// net/http (a client whose Transport is another RoundTripper), even when
// the end of an answer comes a while after its result (a client that
// stopped reading at the result would lose its connection, and every call
// would open one).
func TestConnectionKept(t *testing.T) {
	tr := startWrappedRunner(t, "", t.TempDir(), func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, r)
			time.Sleep(10 * time.Millisecond) // the stream ends after the message
		})
	})
	var dials connCounter
	dialer := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.mu.Lock()
		dials.fresh++
		dials.mu.Unlock()
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
	rt := &connCounter{}
	for _, c := range []struct {
		via    string
		client *http.Client
		fresh  *connCounter
	}{{"the hop", &http.Client{Transport: dialer}, &dials}, {"net/http", &http.Client{Transport: rt}, rt}} {
		s := replica(t, nil, Options{HTTPClient: c.client}, tr.url())
		tools := toolsOf(t, s)
		if res := call(t, tools, "alice", "c1", "write_file", `{"path":"x","content":"1"}`); res.Error != nil {
			t.Fatal(res.Error)
		}
		for range 10 {
			time.Sleep(100 * time.Millisecond) // the last answer's stream has ended: a lower bound
			if res := call(t, tools, "alice", "c1", "read_file", `{"path":"x"}`); res.Error != nil {
				t.Fatal(res.Error)
			}
		}
		if lean := s.conns[ID("alice", "c1")].lean(); lean != (c.via == "the hop") {
			t.Errorf("%s: the calls went through the hop: %v", c.via, lean)
		}
		if c.fresh.fresh > 3 {
			t.Errorf("%s: 11 calls opened %d connections", c.via, c.fresh.fresh)
		}
	}
}

// countTool reports its progress, 1 to 3 of 3, then says "counted".
var countTool = tool.Func(tool.Definition{Name: "count", Description: "counts to 3", Level: tool.LevelRead, Annotations: tool.Annotations{ReadOnly: true}},
	func(ctx context.Context, _ tool.Call) (tool.Result, error) {
		for i := range 3 {
			tool.ReportProgress(ctx, float64(i+1), 3, fmt.Sprintf("step %d", i+1))
		}
		return tool.TextResult("counted"), nil
	})

// TestProgress: a forwarded call's progress reaches the gateway's caller,
// in order, before its result.
func TestProgress(t *testing.T) {
	tr := startTestRunner(t, "", t.TempDir())
	s := replica(t, nil, Options{}, tr.url())
	count := s.Tools([]tool.Definition{countTool.Definition()})[0]
	var got []string
	ctx := tool.WithProgress(context.Background(), func(done, total float64, message string) {
		got = append(got, fmt.Sprintf("%g/%g %s", done, total, message))
	})
	res, err := count.Run(ctx, tool.Call{Name: "count", Args: []byte(`{}`), Principal: "alice", Session: "c1"})
	if err != nil || res.Error != nil || res.Text() != "counted" {
		t.Fatalf("count: %v %v %q", err, res.Error, res.Text())
	}
	if want := "1/3 step 1,2/3 step 2,3/3 step 3"; strings.Join(got, ",") != want {
		t.Errorf("progress %q, want %q", strings.Join(got, ","), want)
	}
}

// TestKeyOf: the id and labels a replica remembers for a key are the ones
// ID and Hash compute for exactly that key, whether remembered or not:
// keys whose strings run together, or swap, or differ by a byte, never
// share an entry, and forgetting them all (past maxKeys) changes nothing.
func TestKeyOf(t *testing.T) {
	s := replica(t, nil, Options{}, "http://127.0.0.1:1")
	pairs := [][2]string{{"ab", "c"}, {"a", "bc"}, {"abc", ""}, {"", "abc"}, {"x", "y"}, {"y", "x"}, {"a\x00", "b"}, {"a", "\x00b"}, {"1:a", "b"}, {"a", "b"},
		{strings.Repeat("p", maxKeyBytes), "c"}}
	ids := map[string][2]string{}
	check := func() {
		for _, p := range pairs {
			k := s.keyOf(p[0], p[1])
			want := keyed{id: ID(p[0], p[1]), key: Key{Principal: Hash(p[0]), Conversation: Hash(p[1])}}
			if k != want {
				t.Fatalf("%q: %+v, want %+v", p, k, want)
			}
			if q, ok := ids[k.id]; ok && q != p {
				t.Fatalf("%q and %q share the id %s", p, q, k.id)
			}
			ids[k.id] = p
		}
	}
	check()
	check() // remembered
	if len(s.keys) != len(pairs)-1 {
		t.Errorf("%d keys remembered, want %d (not the one over %d bytes)", len(s.keys), len(pairs)-1, maxKeyBytes)
	}
	for i := range maxKeys {
		s.keyOf("p", strconv.Itoa(i))
	}
	if len(s.keys) > maxKeys {
		t.Errorf("%d keys remembered, at most %d", len(s.keys), maxKeys)
	}
	check()
}
