package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/tool"
)

func TestIdempotency(t *testing.T) {
	reg := registry.New()
	var runs atomic.Int64
	gate := make(chan struct{})
	reg.Register(tool.New("charge_card", "Charges a card once.", func(_ context.Context, in struct {
		Cents int `json:"cents"`
	}) (string, error) {
		runs.Add(1)
		<-gate
		return "charged", nil
	}, tool.WithLevel(tool.LevelWrite)))
	e := engine.New(engine.Options{Registry: reg, Idempotency: store.NewIdempotency(store.NewMemory(), time.Hour)})
	ctx := context.Background()
	c := tool.Call{Name: "charge_card", Args: json.RawMessage(`{"cents":100}`), IdempotencyKey: "order-7", Session: "s"}

	// Eight duplicates at once: one runs, the others wait for it.
	var wg sync.WaitGroup
	results := make([]tool.Result, 8)
	for i := range results {
		wg.Add(1)
		go func() { defer wg.Done(); results[i] = e.Execute(ctx, c) }()
	}
	for runs.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	close(gate)
	wg.Wait()
	replays := 0
	for _, r := range results {
		if r.IsError() || r.Text() != "charged" {
			t.Fatalf("duplicate got %+v", r)
		}
		if r.Meta["idempotent_replay"] == true {
			replays++
		}
	}
	if runs.Load() != 1 || replays != 7 {
		t.Fatalf("ran %d times with %d replays; want 1 run and 7 replays", runs.Load(), replays)
	}
	// Later retries replay too; another key or another session runs.
	if r := e.Execute(ctx, c); r.Meta["idempotent_replay"] != true || runs.Load() != 1 {
		t.Errorf("a later retry ran again")
	}
	c2 := c
	c2.IdempotencyKey = "order-8"
	e.Execute(ctx, c2)
	c3 := c
	c3.Session = "other"
	e.Execute(ctx, c3)
	if runs.Load() != 3 {
		t.Errorf("runs = %d, want 3 (new key, new session)", runs.Load())
	}
	// Without a key, every call runs.
	e.Execute(ctx, tool.Call{Name: "charge_card", Args: json.RawMessage(`{"cents":100}`)})
	e.Execute(ctx, tool.Call{Name: "charge_card", Args: json.RawMessage(`{"cents":100}`)})
	if runs.Load() != 5 {
		t.Errorf("calls without a key were deduplicated: runs = %d", runs.Load())
	}
}

func TestLimiterInTheChain(t *testing.T) {
	f := newFixture(t)
	lim := policy.NewLimiter(policy.LimitConfig{
		Tools: map[string]policy.Rate{"add": {PerSecond: 0.001, Burst: 2}},
		Loop:  policy.LoopConfig{Off: true},
	})
	e := engine.New(engine.Options{Registry: f.reg, Limiter: lim})
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if r := e.Execute(ctx, call("add", `{"a":1}`)); r.IsError() {
			t.Fatal(r.Text())
		}
	}
	before := f.runs.Load()
	r := e.Execute(ctx, call("add", `{"a":1}`))
	wantError(t, r, tool.RateLimited, "Retry: yes, after")
	if f.runs.Load() != before {
		t.Error("a rate-limited call ran")
	}
	// Invalid calls are refused before they spend a token.
	e2 := engine.New(engine.Options{Registry: f.reg, Limiter: policy.NewLimiter(policy.LimitConfig{
		Tools: map[string]policy.Rate{"add": {PerSecond: 0.001, Burst: 1}},
	})})
	e2.Execute(ctx, call("add", `{"a":"x"}`))
	if r := e2.Execute(ctx, call("add", `{"a":1}`)); r.IsError() {
		t.Errorf("an invalid call spent the budget: %s", r.Text())
	}
}

func TestRedactionAndSpill(t *testing.T) {
	reg := registry.New()
	reg.Register(tool.New("print_env", "Prints settings.", func(context.Context, struct {
		Token string `json:"token,omitempty"`
	}) (string, error) {
		return "HOME=/root\nGITHUB_TOKEN=ghp_" + strings.Repeat("x1Y2", 9) + "\n" + strings.Repeat("line of output\n", 200), nil
	}, tool.ReadOnly()))
	red, err := policy.NewRedactor(policy.DefaultSecrets())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	logPath := filepath.Join(dir, "audit.jsonl")
	log, err := audit.Open(logPath, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	spillDir := filepath.Join(dir, "ws", ".toolgate", "spill")
	e := engine.New(engine.Options{Registry: reg, Redactor: red, Auditor: log, MaxResultBytes: 200,
		Spill: engine.Spill{Root: filepath.Join(dir, "ws"), Dir: ".toolgate/spill", ShowAs: ".toolgate/spill"}})
	res := e.Execute(context.Background(), tool.Call{Name: "print_env", Args: json.RawMessage(`{"token":"AKIAIOSFODNN7EXAMPLE"}`)})
	log.Close()
	text := res.Text()
	if strings.Contains(text, "ghp_") || !strings.Contains(text, "[REDACTED:github_token]") {
		t.Errorf("secret not redacted from the result: %q", text)
	}
	if !strings.Contains(text, `read_file {"path":".toolgate/spill/`) {
		t.Fatalf("no spill hint: %q", text)
	}
	meta := res.Meta["truncated"].(map[string]any)
	name := strings.TrimPrefix(meta["spill"].(string), ".toolgate/spill/")
	full, err := os.ReadFile(filepath.Join(spillDir, name))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(full), "line of output") != 200 || strings.Contains(string(full), "ghp_") {
		t.Errorf("the spill file is not the whole redacted output (%d bytes)", len(full))
	}
	b, _ := os.ReadFile(logPath)
	if strings.Contains(string(b), "AKIAIOSFODNN7EXAMPLE") || !strings.Contains(string(b), "REDACTED:aws_access_key") {
		t.Errorf("secret argument not redacted in the audit log: %s", b)
	}
}

func TestToolAsksForApproval(t *testing.T) {
	reg := registry.New()
	var ran atomic.Int64
	reg.Register(tool.New("run_it", "Runs a command.", func(ctx context.Context, in struct {
		Cmd string `json:"cmd"`
	}) (string, error) {
		if in.Cmd == "rm -r build" && !tool.Approved(ctx) {
			return "", tool.NeedsApproval("it deletes a folder recursively")
		}
		ran.Add(1)
		return "done", nil
	}, tool.WithLevel(tool.LevelWrite)))
	ctx := context.Background()
	c := tool.Call{Name: "run_it", Args: json.RawMessage(`{"cmd":"rm -r build"}`)}

	res := engine.New(engine.Options{Registry: reg}).Execute(ctx, c)
	if !res.Error.AsksApproval() || ran.Load() != 0 {
		t.Fatalf("without an approver the request must stand: %+v", res.Error)
	}
	var asked policy.Request
	no := policy.ApproverFunc(func(_ context.Context, r policy.Request) (policy.Approval, error) {
		asked = r
		return policy.Approval{Approved: false, Reason: "not today"}, nil
	})
	res = engine.New(engine.Options{Registry: reg, Approver: no}).Execute(ctx, c)
	if res.Error == nil || res.Error.Type != tool.ApprovalDenied || ran.Load() != 0 {
		t.Fatalf("a refused approval: %+v", res.Error)
	}
	if !asked.Decision.Confirm || !strings.Contains(asked.Decision.Reason, "deletes a folder") {
		t.Errorf("the approver was not told why: %+v", asked.Decision)
	}
	res = engine.New(engine.Options{Registry: reg, Approver: policy.ApproveAll("test")}).Execute(ctx, c)
	if res.IsError() || ran.Load() != 1 {
		t.Fatalf("an approved call did not run: %+v", res)
	}
}

// TestLoopGuardSeesParsedArguments: the loop guard keys a call by the
// arguments the engine parsed and repaired, so the same call written in
// other ways (spacing, key order, a number sent as a string and repaired)
// is the same call, whether the guard is the Limiter itself or inside a
// chain; a different value is another call.
func TestLoopGuardSeesParsedArguments(t *testing.T) {
	variants := []string{`{"a":1,"b":2}`, `{ "b" : 2 , "a" : 1 }`, "{\n\t\"a\": 1,\n\t\"b\": 2\n}", `{"a":"1","b":2}`, `{"b":"2","a":1}`}
	for _, chained := range []bool{false, true} {
		f := newFixture(t)
		var lim engine.Limiter = policy.NewLimiter(policy.LimitConfig{Loop: policy.LoopConfig{Max: 4}})
		if chained {
			lim = engine.ChainLimiters(lim, policy.NewLimiter(policy.LimitConfig{Loop: policy.LoopConfig{Off: true}}))
		}
		e := engine.New(engine.Options{Registry: f.reg, Limiter: lim})
		ctx := context.Background()
		for i, a := range variants {
			res := e.Execute(ctx, call("add", a))
			if i < 4 {
				if res.IsError() {
					t.Fatalf("chained %v: call %d (%s): %s", chained, i, a, res.Text())
				}
				continue
			}
			wantError(t, res, tool.LoopDetected)
		}
		if res := e.Execute(ctx, call("add", `{"a":1,"b":3}`)); res.IsError() {
			t.Errorf("chained %v: another call was refused: %s", chained, res.Text())
		}
	}
}

// TestRedactStructuredBesideEscapes: a secret of each default pattern
// right after or before a character its JSON encoding escapes (a newline,
// a tab, any control character, '"', '\', '<', '>', '&', U+2028, U+2029,
// a bad byte) or a non-word character, in a structured value's strings
// (values, keys, array items, deep), is redacted as in a text block.
// The stage searched the HTML-escaped encoding, where "\u003cghp_..."
// has no word boundary before the secret.
func TestRedactStructuredBesideEscapes(t *testing.T) {
	secrets := []string{
		"AKIAIOSFODNN7EXAMPLE", "ghp_" + strings.Repeat("x1Y2", 9), "github_pat_" + strings.Repeat("a1_B", 6),
		"sk-ant-api03-abcdefghijklmnopqrstuvwx", "sk-proj-abcdefghijklmnopqrstuvwx", "xoxb-1234567890-abcdefghij",
		"AIza" + strings.Repeat("0a-B_", 6) + "x0aBc", "sk_live_" + strings.Repeat("0aB", 8),
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijklmnop",
		"-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90\n-----END RSA PRIVATE KEY-----",
		"https://user:hunter22@example.org", "password=hunter2hunter2",
	}
	var beside []string
	for c := range 0x20 {
		beside = append(beside, string(rune(c)))
	}
	beside = append(beside, `"`, `\`, "<", ">", "&", "\u2028", "\u2029", "é", "\xff", " ")
	red, err := policy.NewRedactor(policy.DefaultSecrets())
	if err != nil {
		t.Fatal(err)
	}
	var strs []string
	for _, s := range secrets {
		for _, c := range beside {
			strs = append(strs, c+s, s+c)
		}
	}
	keys := map[string]any{}
	for _, s := range strs {
		keys[s] = 1
	}
	value := map[string]any{"values": strs, "deep": map[string]any{"a": []any{map[string]any{"b": strs}}}, "keys": keys}
	reg := registry.New()
	reg.Register(tool.New("report", "Reports.", func(context.Context, struct{}) (tool.Result, error) {
		return tool.Result{Content: []tool.Content{tool.TextContent("see the value")}, Structured: value}, nil
	}, tool.ReadOnly()))
	e := engine.New(engine.Options{Registry: reg, Redactor: red})
	res := e.Execute(context.Background(), tool.Call{Name: "report", Args: json.RawMessage(`{}`)})
	if res.IsError() {
		t.Fatal(res.Text())
	}
	out, err := json.Marshal(res.Structured)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Values []string
		Deep   struct{ A []struct{ B []string } }
		Keys   map[string]any
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		if strings.Contains(string(out), s) || strings.Contains(fmt.Sprint(got), s) {
			t.Errorf("%q is not redacted everywhere: %s", s, out)
		}
	}
	if len(got.Values) != len(strs) || len(got.Deep.A) != 1 || len(got.Deep.A[0].B) != len(strs) {
		t.Fatalf("the value lost its shape: %s", out)
	}
	for i, s := range strs {
		var text string
		b, _ := json.Marshal(s)
		json.Unmarshal(b, &text) // a bad byte is U+FFFD in JSON
		want, _ := red.Redact(text)
		if got.Values[i] != want || got.Deep.A[0].B[i] != want {
			t.Errorf("%q: redacted to %q and %q, as a text %q", s, got.Values[i], got.Deep.A[0].B[i], want)
		}
		if _, ok := got.Keys[want]; !ok {
			t.Errorf("key %q: not redacted as a text (%q)", s, want)
		}
	}
	if n, _ := res.Meta["redacted"].(int); n < 3*len(strs) {
		t.Errorf("redacted %v, want at least %d", res.Meta["redacted"], 3*len(strs))
	}
}
