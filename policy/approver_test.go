package policy_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/tool"
)

func askReq(def tool.Definition, args string, session string) policy.Request {
	c := tool.Call{Name: def.Name, Args: json.RawMessage(args), Session: session}
	return policy.Request{Call: c, Definition: def, Decision: policy.Decision{Effect: policy.Ask, Rule: "level:2", Level: def.Level, Confirm: def.Level == 3, Reason: "asked"}}
}

func TestAppendAllowKeepsTheFile(t *testing.T) {
	const rule = "Bash(npm run build)"
	for _, tc := range []struct{ name, in, wantLine string }{
		{"block list", "# head\nmode: default # trailing\nallow:\n  - read_file # one\n  # inside\n  - \"Bash(ls:*)\"\n\n# before deny\ndeny:\n  - github__*\n", "  - \"Bash(npm run build)\"\n\n# before deny"},
		{"block list, 4 spaces", "allow:\n    - read_file\nask: []\n", "    - \"Bash(npm run build)\"\nask: []"},
		{"flow list", "allow: [read_file, \"Bash(ls:*)\"] # kept\n", "allow: [read_file, \"Bash(ls:*)\", \"Bash(npm run build)\"] # kept"},
		{"empty flow list", "mode: default\nallow: []\n", "allow: [\"Bash(npm run build)\"]"},
		{"null", "allow:\n# nothing yet\nmode: default\n", "allow:\n  - \"Bash(npm run build)\"\n# nothing yet"},
		{"missing", "# only a comment\nmode: default", "mode: default\n\n# added by an \"always\" approval\nallow:\n  - \"Bash(npm run build)\"\n"},
		{"empty file", "", "allow:\n  - \"Bash(npm run build)\"\n"},
		{"last key, no final newline", "allow:\n  - read_file", "  - read_file\n  - \"Bash(npm run build)\"\n"},
		{"object entries", "allow:\n  - rule: read_file\n    reason: |\n      reading is fine\n      always\n# tail\n", "      always\n  - \"Bash(npm run build)\"\n# tail"},
	} {
		dir := t.TempDir()
		f := filepath.Join(dir, "toolgate.yaml")
		if err := os.WriteFile(f, []byte(tc.in), 0o640); err != nil {
			t.Fatal(err)
		}
		if err := policy.AppendAllow(f, rule); err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		out, _ := os.ReadFile(f)
		if !strings.Contains(string(out), tc.wantLine) {
			t.Errorf("%s: got\n%s\nwant it to contain\n%s", tc.name, out, tc.wantLine)
		}
		for _, line := range strings.Split(tc.in, "\n") {
			if i := strings.Index(line, "#"); i >= 0 && !strings.Contains(string(out), line[i:]) {
				t.Errorf("%s: lost the comment %q", tc.name, line)
			}
		}
		p, err := policy.Load(f)
		if err != nil || p.Allow[len(p.Allow)-1] != rule {
			t.Errorf("%s: reload: %v %v", tc.name, p, err)
		}
		if fi, _ := os.Stat(f); fi.Mode().Perm() != 0o640 {
			t.Errorf("%s: permissions changed to %v", tc.name, fi.Mode())
		}
		// a second append of the same rule changes nothing
		policy.AppendAllow(f, rule)
		again, _ := os.ReadFile(f)
		if string(again) != string(out) {
			t.Errorf("%s: the rule was added twice", tc.name)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Errorf("%s: temporary files left: %v", tc.name, entries)
		}
	}
	for _, tc := range []struct{ name, in string }{
		{"two documents", "mode: default\n---\nmode: bypass\n"},
		{"allow is not a list", "allow: read_file\n"},
		{"broken file", "allow: [\n"},
	} {
		f := filepath.Join(t.TempDir(), "toolgate.yaml")
		os.WriteFile(f, []byte(tc.in), 0o644)
		if err := policy.AppendAllow(f, rule); err == nil {
			t.Errorf("%s: AppendAllow succeeded", tc.name)
		}
		if out, _ := os.ReadFile(f); string(out) != tc.in {
			t.Errorf("%s: the file changed after a refused edit", tc.name)
		}
	}
	if err := policy.AppendAllow(filepath.Join(t.TempDir(), "x.yaml"), "Bash("); err == nil {
		t.Error("a malformed rule was accepted")
	}
}

func TestGateSessionMemoryAndScopes(t *testing.T) {
	var asked atomic.Int32
	answer := policy.Approval{Approved: true, Approver: "test", Scope: policy.Session}
	inner := policy.ApproverFunc(func(ctx context.Context, r policy.Request) (policy.Approval, error) {
		asked.Add(1)
		return answer, nil
	})
	g := policy.NewGate(inner, policy.Default())
	ctx := context.Background()
	a, _ := g.Approve(ctx, askReq(defGH, `{"title":"x","body":"y"}`, "s1"))
	if !a.Approved || a.Scope != policy.Session || asked.Load() != 1 {
		t.Fatalf("first ask: %+v", a)
	}
	a, _ = g.Approve(ctx, askReq(defGH, `{"body": "y", "title":"x"}`, "s1"))
	if !a.Approved || a.Approver != "session" || asked.Load() != 1 {
		t.Errorf("the same call (keys reordered) was asked again: %+v", a)
	}
	g.Approve(ctx, askReq(defGH, `{"title":"z"}`, "s1"))
	g.Approve(ctx, askReq(defGH, `{"title":"x","body":"y"}`, "s2"))
	if asked.Load() != 3 {
		t.Errorf("other arguments or sessions must be asked: %d questions", asked.Load())
	}
	g.EndSession("s1")
	g.Approve(ctx, askReq(defGH, `{"title":"x","body":"y"}`, "s1"))
	if asked.Load() != 4 {
		t.Error("an ended session still remembered its approvals")
	}
	// level 3: approved once only, never from memory
	a, _ = g.Approve(ctx, askReq(defDel, `{"path":"a"}`, "s1"))
	b, _ := g.Approve(ctx, askReq(defDel, `{"path":"a"}`, "s1"))
	if a.Scope != policy.Once || b.Approver != "test" || asked.Load() != 6 {
		t.Errorf("level-3 approvals: %+v %+v (%d questions)", a, b, asked.Load())
	}
	// always without a policy file: kept for the session
	answer.Scope = policy.Always
	a, _ = g.Approve(ctx, askReq(defGH, `{"title":"new"}`, "s3"))
	if !a.Approved || a.Scope != policy.Session || !strings.Contains(a.Reason, "no file") {
		t.Errorf("always without a file: %+v", a)
	}
}

func TestGateDenialStreakAndTimeout(t *testing.T) {
	deny := policy.ApproverFunc(func(ctx context.Context, r policy.Request) (policy.Approval, error) {
		return policy.Approval{Approver: "test", Reason: "not now"}, nil
	})
	g := policy.NewGate(deny, policy.Default())
	ctx := context.Background()
	for i := 1; i <= 4; i++ {
		a, _ := g.Approve(ctx, askReq(defGH, `{"title":"x"}`, "s"))
		stop := strings.Contains(a.Reason, "stop calling tools")
		if a.Approved || !strings.HasPrefix(a.Reason, "not now") || stop != (i >= 3) {
			t.Errorf("denial %d: %+v", i, a)
		}
	}
	if a, _ := g.Approve(ctx, askReq(defGH, `{"title":"x"}`, "other")); strings.Contains(a.Reason, "stop") {
		t.Error("the streak leaked into another session")
	}

	p := policy.Default()
	p.Approvals.Timeout = 20 * time.Millisecond
	p.Approvals.DenialStreak = 1
	wait := policy.ApproverFunc(func(ctx context.Context, r policy.Request) (policy.Approval, error) {
		<-ctx.Done()
		return policy.Approval{Approver: "slow"}, ctx.Err()
	})
	a, err := policy.NewGate(wait, p).Approve(ctx, askReq(defGH, `{}`, "s"))
	if err != nil || a.Approved || !strings.Contains(a.Reason, "no one answered within 20ms") || !strings.Contains(a.Reason, "stop calling tools") {
		t.Errorf("timeout: %+v %v", a, err)
	}
}

func TestGateAlwaysWritesThePolicyFile(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "toolgate.yaml")
	src := "# my policy\nroots: [.]\nallow:\n  - Bash(ls:*) # listing is fine\n"
	os.WriteFile(f, []byte(src), 0o644)
	p, err := policy.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	c := cmd("npm run build && go vet ./...")
	c.Session = "s"
	d := p.Decide(defCmd, c)
	if d.Effect != policy.Ask {
		t.Fatalf("decision %+v", d)
	}
	var asked atomic.Int32
	var offered []string
	g := policy.NewGate(policy.ApproverFunc(func(ctx context.Context, r policy.Request) (policy.Approval, error) {
		asked.Add(1)
		offered = r.AlwaysRules
		return policy.Approval{Approved: true, Approver: "test", Scope: policy.Always}, nil
	}), p)
	a, err := g.Approve(context.Background(), policy.Request{Call: c, Definition: defCmd, Decision: d})
	if err != nil || !a.Approved || a.Scope != policy.Always {
		t.Fatalf("approval %+v %v", a, err)
	}
	if !slices.Equal(offered, []string{"Bash(npm run build)", "Bash(go vet ./...)"}) {
		t.Errorf("always rules offered: %q", offered)
	}
	out, _ := os.ReadFile(f)
	if !strings.HasPrefix(string(out), src) || !strings.Contains(string(out), `  - "Bash(go vet ./...)"`) {
		t.Errorf("file after always:\n%s", out)
	}
	// this process: answered without asking
	c.Session = "another"
	if a, _ := g.Approve(context.Background(), policy.Request{Call: c, Definition: defCmd, Decision: d}); !a.Approved || a.Approver != "always" || asked.Load() != 1 {
		t.Errorf("the always rule does not hold in this process: %+v", a)
	}
	// a reload sees the rules
	p2, err := policy.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	if d := p2.Decide(defCmd, c); d.Effect != policy.Allow {
		t.Errorf("after reload: %+v", d)
	}
	if d := p2.Decide(defCmd, cmd("npm run build && rm -rf x")); d.Effect == policy.Allow {
		t.Errorf("the always rule is too broad: %+v", d)
	}
}

func TestSuggestRules(t *testing.T) {
	root := t.TempDir()
	p := policy.Default()
	p.Roots = []string{root}
	for _, tc := range []struct {
		def  tool.Definition
		args map[string]any
		want []string
	}{
		{defCmd, map[string]any{"command": "git commit -m 'a b'"}, []string{"Bash(git commit -m 'a b')"}},
		{defCmd, map[string]any{"command": "rm $X"}, nil},
		{defCmd, map[string]any{"command": "ls *.go"}, nil},
		{defWrite, map[string]any{"path": "src/a.go"}, []string{"write_file(/src/a.go)"}},
		{defWrite, map[string]any{"path": "/elsewhere/a.go"}, nil},
		{defMove, map[string]any{"source": "a", "destination": "b/c"}, []string{"move_file(/b/c, /a)"}}, // properties in name order,
		{defHTTP, map[string]any{"url": "https://API.example.com/x"}, []string{"http_request(domain:api.example.com)"}},
		{defGH, map[string]any{"title": "x"}, []string{"github__create_issue"}},
	} {
		got := policy.SuggestRules(p, tc.def, pcall(tc.def, tc.args))
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s %v: %q, want %q", tc.def.Name, tc.args, got, tc.want)
		}
		for _, r := range got { // each suggestion allows exactly the call
			q := policy.Default()
			q.Roots, q.Allow = p.Roots, got
			if d := q.Decide(tc.def, pcall(tc.def, tc.args)); d.Effect != policy.Allow {
				t.Errorf("suggestion %q does not allow its call: %+v", r, d)
			}
		}
	}
}

func TestElicitation(t *testing.T) {
	var gotSchema map[string]any
	var gotMsg string
	reply := func(action string, content map[string]any) policy.Elicitation {
		return policy.Elicitation{Elicit: func(ctx context.Context, message string, schema map[string]any) (string, map[string]any, error) {
			gotMsg, gotSchema = message, schema
			return action, content, nil
		}}
	}
	ctx := context.Background()
	req := askReq(defGH, `{"title":"x"}`, "s")
	req.AlwaysRules = []string{"github__create_issue"}
	for _, tc := range []struct {
		e     policy.Elicitation
		req   policy.Request
		ok    bool
		scope policy.Scope
	}{
		{reply("accept", map[string]any{"decision": "session"}), req, true, policy.Session},
		{reply("accept", map[string]any{"decision": "always"}), req, true, policy.Always},
		{reply("accept", map[string]any{"decision": "deny", "reason": "use the web UI"}), req, false, ""},
		{reply("decline", nil), req, false, ""},
		{reply("cancel", nil), req, false, ""},
		{reply("accept", map[string]any{"decision": "always"}), askReq(defGH, `{}`, "s"), false, ""}, // not offered
		{reply("accept", map[string]any{"decision": "once", "confirm": "delete_file"}), askReq(defDel, `{}`, "s"), true, policy.Once},
		{reply("accept", map[string]any{"decision": "once", "confirm": "sure"}), askReq(defDel, `{}`, "s"), false, ""},
		{reply("accept", map[string]any{"decision": "session", "confirm": "yes"}), askReq(defDel, `{}`, "s"), false, ""},
	} {
		a, err := tc.e.Approve(ctx, tc.req)
		if err != nil || a.Approved != tc.ok || a.Scope != tc.scope || a.Approver != "elicitation" {
			t.Errorf("%+v → %+v %v", tc.req.Decision, a, err)
		}
	}
	if !strings.Contains(gotMsg, "delete_file") || gotSchema["properties"].(map[string]any)["confirm"] == nil || gotSchema["required"] == nil {
		t.Errorf("level-3 form: %q %v", gotMsg, gotSchema)
	}
	a, _ := reply("accept", map[string]any{"decision": "deny", "reason": "use the web UI"}).Approve(ctx, req)
	if a.Reason != "use the web UI" {
		t.Errorf("denial reason lost: %+v", a)
	}
}

// TestConcurrentDecisionsAndApprovals runs under -race: one policy and one
// Gate shared by many callers, lists replaced while decisions run.
func TestConcurrentDecisionsAndApprovals(t *testing.T) {
	p := pol([]string{"Bash(rm:*)"}, nil, []string{"Bash(ls:*)"})
	g := policy.NewGate(policy.ApproveAll("test"), p)
	done := make(chan bool)
	for i := 0; i < 16; i++ {
		go func(i int) {
			for j := 0; j < 50; j++ {
				if d := p.Decide(defCmd, cmd("ls && rm x")); d.Effect != policy.Deny {
					t.Errorf("decision %+v", d)
				}
				r := askReq(defGH, `{"n":`+strings.Repeat("1", 1+j%3)+`}`, "s"+string(rune('a'+i%4)))
				if a, _ := g.Approve(context.Background(), r); !a.Approved {
					t.Errorf("approval %+v", a)
				}
			}
			done <- true
		}(i)
	}
	for i := 0; i < 16; i++ {
		<-done
	}
}
