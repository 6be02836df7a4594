package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/policy"
)

// page is what an approval page sees of a QueueApprover: its list and
// its answers (package console serves them over HTTP).
type page struct {
	t *testing.T
	h *policy.QueueApprover
}

// pending waits (bounded) until the page lists n calls, and returns them
// as the approvals API sends them (JSON).
func (p page) pending(n int) []listedCall {
	p.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		l, err := p.h.Pending(context.Background())
		if err != nil {
			p.t.Fatal(err)
		}
		b, _ := json.Marshal(l)
		var list []listedCall
		if err := json.Unmarshal(b, &list); err != nil {
			p.t.Fatal(err)
		}
		if len(list) == n || time.Now().After(deadline) {
			if len(list) != n {
				p.t.Fatalf("%d calls listed, want %d", len(list), n)
			}
			return list
		}
	}
}

type listedCall struct {
	ID          string          `json:"id"`
	Tool        string          `json:"tool"`
	Arguments   json.RawMessage `json:"arguments"`
	Pretty      string          `json:"pretty"`
	Reason      string          `json:"reason"`
	AlwaysRules []string        `json:"always_rules"`
	Replica     string          `json:"replica"`
}

// decide answers as the API does (by "" : the approver is "http"), and
// returns the HTTP status the API would answer with.
func (p page) decide(id, decision, reason, confirm string) int {
	p.t.Helper()
	err := p.h.Decide(context.Background(), id, decision, reason, confirm, "")
	var de *policy.DecideError
	switch {
	case err == nil:
		return http.StatusOK
	case errors.As(err, &de):
		return de.Status
	}
	p.t.Fatal(err)
	return 0
}

// TestQueueApproversShareAQueue: two approvers over one queue (two
// replicas): a call asked on one is listed on both, named for its
// replica, answered on the other, once.
func TestQueueApproversShareAQueue(t *testing.T) {
	q := policy.NewMemoryQueue()
	ha := policy.NewQueueApprover(policy.QueueOptions{Queue: q, Replica: "a"})
	hb := policy.NewQueueApprover(policy.QueueOptions{Queue: q, Replica: "b"})
	pa, pb := page{t, ha}, page{t, hb}
	for _, tc := range []struct {
		decision, reason string
		asker            *policy.QueueApprover
		answerOn, other  page
		want             policy.Approval
	}{
		{"once", "", ha, pb, pa, policy.Approval{Approved: true, Approver: "http", Scope: policy.Once}},
		{"session", "", hb, pa, pb, policy.Approval{Approved: true, Approver: "http", Scope: policy.Session}},
		{"deny", "run the tests first", ha, pb, pa, policy.Approval{Approver: "http", Reason: "run the tests first"}},
		{"deny", "", hb, pb, pa, policy.Approval{Approver: "http"}},
	} {
		got := make(chan policy.Approval, 1)
		go func() {
			a, err := tc.asker.Approve(context.Background(), askReq(defGH, `{"title":"x"}`, "s"))
			if err != nil {
				t.Error(err)
			}
			got <- a
		}()
		l := tc.answerOn.pending(1)
		if o := tc.other.pending(1); o[0].ID != l[0].ID {
			t.Fatalf("the pages list %v and %v", l, o)
		}
		if want := map[*policy.QueueApprover]string{ha: "a", hb: "b"}[tc.asker]; l[0].Replica != want {
			t.Errorf("listed for replica %q, want %q", l[0].Replica, want)
		}
		if code := tc.answerOn.decide(l[0].ID, tc.decision, tc.reason, ""); code != http.StatusOK {
			t.Fatalf("%s: %d", tc.decision, code)
		}
		if a := <-got; a != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.decision, a, tc.want)
		}
		for _, p := range []page{tc.answerOn, tc.other} {
			if code := p.decide(l[0].ID, "once", "", ""); code != http.StatusConflict {
				t.Errorf("%s, answered again: %d, want 409", tc.decision, code)
			}
		}
		tc.other.pending(0)
	}
	if code := pa.decide("no-such-id", "once", "", ""); code != http.StatusNotFound {
		t.Errorf("an unknown id: %d", code)
	}
}

// recordingQueue is a memory queue that keeps every entry it was given.
type recordingQueue struct {
	policy.ApprovalQueue
	entries chan []byte
}

func (q recordingQueue) Wait(ctx context.Context, id string, entry []byte, ttl time.Duration) ([]byte, error) {
	q.entries <- entry
	return q.ApprovalQueue.Wait(ctx, id, entry, ttl)
}

// TestQueueApproverRedacts: what a queue holds and the page shows has the
// call's secrets redacted, wherever they are in the arguments, and stays
// valid JSON; the call itself is untouched.
func TestQueueApproverRedacts(t *testing.T) {
	red, err := policy.NewRedactor(policy.DefaultSecrets())
	if err != nil {
		t.Fatal(err)
	}
	gh := "ghp_" + strings.Repeat("Zq9", 12)
	aws := "AKIA" + strings.Repeat("Q", 16)
	key := "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7\nabc\n-----END RSA PRIVATE KEY-----"
	keyJSON, _ := json.Marshal(key)
	for _, tc := range []struct {
		name, args, secret string
	}{
		{"string value", `{"command":"curl -H 'Authorization: token ` + gh + `' https://api.github.com"}`, gh},
		{"nested array", `{"a":[{"b":["` + aws + `"]}]}`, aws},
		{"object key", `{"` + gh + `":1}`, gh},
		{"member", `{"password": "hunter2-correct-horse"}`, "hunter2-correct-horse"},
		{"assignment", `{"env":"DB_PASSWORD=s3cr3t-value-here"}`, "s3cr3t-value-here"},
		{"url password", `{"url":"postgres://app:pa55word-x@db.internal/app"}`, "pa55word-x"},
		{"escaped private key", `{"key":` + string(keyJSON) + `}`, "MIIEpAIBAAKCAQEA7"},
		{"escaped quote after a secret", `{"cmd":"export API_KEY=abcdefgh12\"345 && run"}`, "abcdefgh12"},
		{"not JSON", `{"command": "x ` + gh, gh},
		{"numbers kept", `{"n": 12345678901234567890, "token": "` + gh + `"}`, gh},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := recordingQueue{policy.NewMemoryQueue(), make(chan []byte, 1)}
			h := policy.NewQueueApprover(policy.QueueOptions{Queue: q, Redactor: red})
			p := page{t, h}
			req := askReq(defCmd, tc.args, "s")
			req.Decision.Reason = "asks because of " + tc.args
			req.AlwaysRules = []string{"Bash(echo " + tc.args + ")"} // rules are made of the arguments
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { h.Approve(ctx, req); close(done) }()
			entry := <-q.entries
			l := p.pending(1)
			cancel()
			<-done
			if strings.Contains(string(entry), tc.secret) {
				t.Errorf("the queue holds the secret: %s", entry)
			}
			if b, _ := json.Marshal(l); strings.Contains(string(b), tc.secret) {
				t.Errorf("the page shows the secret: %s", b)
			}
			if !json.Valid(l[0].Arguments) || !strings.Contains(string(entry), "REDACTED") {
				t.Errorf("arguments %s (entry %s)", l[0].Arguments, entry)
			}
			if !strings.Contains(string(req.Call.Args), tc.secret) {
				t.Error("the call's own arguments were changed")
			}
			if tc.name == "numbers kept" && !strings.Contains(string(l[0].Arguments), "12345678901234567890") {
				t.Errorf("a number changed: %s", l[0].Arguments)
			}
		})
	}
}

func TestApprovalsTokenEnv(t *testing.T) {
	for _, tc := range []struct {
		env string
		ok  bool
	}{
		{"TOOLGATE_APPROVAL_TOKEN", true}, {"_T1", true}, {"1TOKEN", false}, {"A B", false}, {"A=B", false}, {"$A", false}, {"A-B", false},
	} {
		_, err := policy.Parse([]byte("approvals:\n  token_env: '" + tc.env + "'\n"))
		if (err == nil) != tc.ok || err != nil && !strings.Contains(err.Error(), "token_env") {
			t.Errorf("token_env %q: %v", tc.env, err)
		}
	}
}
