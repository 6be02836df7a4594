package policy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/tool"
)

func TestConsoleRoles(t *testing.T) {
	custom := Console{Readers: []string{"auditor"}, Approvers: []string{"oncall"}}
	for _, c := range []struct {
		name       string
		cfg        Console
		roles      []string
		read, answ bool
	}{
		{"no roles", Console{}, nil, false, false},
		{"empty role", Console{}, []string{""}, false, false},
		{"reader", Console{}, []string{"reader"}, true, false},
		{"approver", Console{}, []string{"approver"}, true, true},
		{"admin", Console{}, []string{"x", "admin"}, true, true},
		{"unknown", Console{}, []string{"Admin", "approvers"}, false, false},
		{"custom reader", custom, []string{"auditor"}, true, false},
		{"custom approver reads", custom, []string{"oncall"}, true, true},
		{"defaults replaced", custom, []string{"admin", "reader"}, false, false},
	} {
		if got := c.cfg.MayRead(c.roles); got != c.read {
			t.Errorf("%s: MayRead = %v", c.name, got)
		}
		if got := c.cfg.MayAnswer(c.roles); got != c.answ {
			t.Errorf("%s: MayAnswer = %v", c.name, got)
		}
	}
}

func TestConsoleSection(t *testing.T) {
	p, err := Parse([]byte("console: {readers: [ops], approvers: [lead]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Console.MayAnswer([]string{"lead"}) || p.Console.MayAnswer([]string{"admin"}) {
		t.Errorf("console section not read: %+v", p.Console)
	}
	for _, bad := range []string{"console: {approvers: ['']}\n", "console: {readers: [a, '']}\n", "console: {admins: [x]}\n"} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// A decision made through Decide is recorded under the name given, and a
// watched queue tells its subscribers about the call and its answer.
func TestDecideByAndWatch(t *testing.T) {
	q := Watch(NewMemoryQueue())
	changes, stop := q.Subscribe()
	defer stop()
	h := NewQueueApprover(QueueOptions{Queue: q})
	got := make(chan Approval, 1)
	go func() {
		a, _ := h.Approve(context.Background(), Request{Call: tool.Call{Name: "write_file", Args: []byte(`{"path":"a"}`)}, Decision: Decision{Effect: Ask}})
		got <- a
	}()
	<-changes
	var pend []PendingCall
	for len(pend) == 0 {
		pend, _ = h.Pending(context.Background())
		time.Sleep(time.Millisecond)
	}
	for _, c := range []struct{ decision, want string }{{"maybe", "decision must be"}, {"always", "not offered"}} {
		err := h.Decide(context.Background(), pend[0].ID, c.decision, "", "", "console:bob")
		if de, ok := err.(*DecideError); !ok || de.Status != 400 || !strings.Contains(de.Message, c.want) {
			t.Errorf("%s: %v", c.decision, err)
		}
	}
	if err := h.Decide(context.Background(), pend[0].ID, "deny", "not now", "", "console:bob"); err != nil {
		t.Fatal(err)
	}
	a := <-got
	if a.Approved || a.Approver != "console:bob" || a.Reason != "not now" {
		t.Errorf("approval = %+v", a)
	}
	if err := h.Decide(context.Background(), pend[0].ID, "once", "", "", "console:bob"); err.(*DecideError).Status != 404 && err.(*DecideError).Status != 409 {
		t.Errorf("second answer: %v", err)
	}
	<-changes
}

// FirstAnswer takes the first answer and withdraws the other questions;
// failures give no answer unless all fail.
func TestFirstAnswer(t *testing.T) {
	withdrawn := make(chan struct{}, 4)
	waits := ApproverFunc(func(ctx context.Context, req Request) (Approval, error) {
		<-ctx.Done()
		withdrawn <- struct{}{}
		return Approval{Approver: "slow", Reason: "withdrawn"}, nil
	})
	answers := func(who string, yes bool) Approver {
		return ApproverFunc(func(context.Context, Request) (Approval, error) { return Approval{Approved: yes, Approver: who}, nil })
	}
	fails := func(who string) Approver {
		return ApproverFunc(func(context.Context, Request) (Approval, error) {
			return Approval{Approver: who}, tool.Errorf(tool.Unavailable, "%s cannot ask", who)
		})
	}
	for _, c := range []struct {
		name     string
		list     []Approver
		who      string
		approved bool
		err      bool
		withdraw int
	}{
		{"one", []Approver{answers("a", true)}, "a", true, false, 0},
		{"first of two", []Approver{waits, answers("console:bob", false)}, "console:bob", false, false, 1},
		{"a failure is no answer", []Approver{fails("elicitation"), answers("console:bob", true)}, "console:bob", true, false, 0},
		{"all fail", []Approver{fails("x"), fails("y")}, "", false, true, 0},
		{"none", nil, "", false, true, 0},
	} {
		a, err := FirstAnswer(c.list...).Approve(context.Background(), Request{})
		if (err != nil) != c.err || (!c.err && (a.Approver != c.who || a.Approved != c.approved)) {
			t.Errorf("%s: %+v, %v", c.name, a, err)
		}
		for range c.withdraw {
			<-withdrawn // the slow question was withdrawn, or this blocks
		}
	}
}
