package runner

import (
	"context"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/tool"
)

func kept(e *Events) ProcessEvents {
	p, _ := e.Check(context.Background(), tool.Definition{}, tool.Call{}, tool.Result{}).Meta[MetaProcessEvents].(ProcessEvents)
	return p
}

// TestEventsBound: past MaxEvents (or MaxEventBytes) unacknowledged events
// the oldest are dropped, and one "dropped" event first counts them up to
// the number of the last one dropped; an acknowledgement forgets up to its
// number, and one of another epoch nothing.
func TestEventsBound(t *testing.T) {
	// A new keeper holds its "opened" event; acknowledged, it is gone.
	fresh := func() *Events {
		e := NewEvents()
		if p := kept(e); len(p.Events) != 1 || p.Events[0].Kind != "opened" || p.Events[0].Seq != 1 {
			t.Fatalf("a new keeper holds %+v, want its opened event", p.Events)
		}
		e.Ack(kept(e).Epoch, 1)
		return e
	}
	e := fresh()
	for range MaxEvents + 9 {
		e.Add(ProcessEvent{Kind: "start", ID: "p"})
	}
	p := kept(e)
	if n := len(p.Events); n != MaxEvents {
		t.Fatalf("%d events kept, want %d", n, MaxEvents)
	}
	d := p.Events[0]
	if d.Kind != "dropped" || d.Bytes != 10 || d.Seq != 11 || p.Events[1].Seq != 12 || p.Events[MaxEvents-1].Seq != MaxEvents+10 {
		t.Errorf("first %+v, then %+v … %+v", d, p.Events[1], p.Events[MaxEvents-1])
	}
	e.Ack("another", MaxEvents+10)
	if n := len(kept(e).Events); n != MaxEvents {
		t.Errorf("an ack of another epoch forgot: %d left", n)
	}
	e.Ack(p.Epoch, 500)
	if p := kept(e); len(p.Events) != MaxEvents+10-500 || p.Events[0].Seq != 501 {
		t.Errorf("after ack 500: %d left, first %+v", len(p.Events), p.Events[0])
	}
	// Bytes: long commands fill MaxEventBytes before MaxEvents.
	e = fresh()
	long := strings.Repeat("x", 10<<10)
	for range 300 {
		e.Add(ProcessEvent{Kind: "start", Command: long})
	}
	p = kept(e)
	total := 0
	for _, ev := range p.Events {
		total += eventBytes(ev)
	}
	if total > MaxEventBytes || p.Events[0].Kind != "dropped" || p.Events[0].Bytes+len(p.Events)-1 != 300 {
		t.Errorf("%d bytes kept in %d events, first %+v", total, len(p.Events), p.Events[0])
	}
	if epoch, seq, ok := ParseAck(Ack(p.Epoch, 42)); !ok || epoch != p.Epoch || seq != 42 {
		t.Errorf("ParseAck(Ack) = %s %d %v", epoch, seq, ok)
	}
}
