package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/toolgate/toolgate/tool"
)

// MetaProcessEvents is the Result.Meta key under which a sandbox sends the
// events of its processes (start, write, stop, end) that its gateway has
// not acknowledged yet: a ProcessEvents. The runner writes no audit log,
// the gateway does.
const MetaProcessEvents = "toolgate/process_events"

// AckHeader, on a request to a sandbox, acknowledges its process events:
// "EPOCH:SEQ", every event of that epoch up to SEQ is in the gateway's
// audit log, and the sandbox need keep them no longer.
const AckHeader = "Toolgate-Events-Acked"

// ProcessEvents are the events a sandbox keeps, as a result carries them.
// Epoch names the keeper (a new one at each opening of the sandbox in a
// runner process): numbers count from 1 within it.
type ProcessEvents struct {
	Epoch  string         `json:"epoch"`
	Events []ProcessEvent `json:"events"`
}

// ProcessEvent is one event of a process in a sandbox. Kind "dropped"
// stands for Bytes events that the sandbox could not keep until they were
// acknowledged (its bound), the last of them numbered Seq. Kind "opened"
// is the first event of every keeper (Seq 1), of no process: it makes the
// first result of each opening carry the new epoch, so that a gateway
// learns at once that the opening it knew is gone, with the events it
// kept that no result carried.
type ProcessEvent struct {
	Seq     uint64 `json:"seq"`
	Kind    string `json:"kind"`
	ID      string `json:"id,omitempty"`
	Command string `json:"command,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Bytes   int    `json:"bytes,omitempty"`
}

// The most a sandbox keeps unacknowledged: events and their bytes.
const (
	MaxEvents     = 1000
	MaxEventBytes = 1 << 20
)

// Events keeps a sandbox's process events, numbered, from when they
// happen until its gateway acknowledges them (AckHeader on a later
// request, read by the Runner for a Sandbox's Events): every result carries all those not acknowledged (Check), so a
// result that is lost on its way (an error, a timeout, a cancelled call)
// loses none; the next carries them again. At most MaxEvents events and
// MaxEventBytes bytes are kept: past either the oldest are dropped, and a
// "dropped" event counting them takes their place, so the gateway audits
// the gap. It is safe for concurrent use.
type Events struct {
	epoch string

	mu    sync.Mutex
	next  uint64
	evs   []ProcessEvent // oldest first; evs[0] may be the "dropped" one
	bytes int
}

// NewEvents returns a keeper with a new epoch, holding its "opened" event.
func NewEvents() *Events {
	b := make([]byte, 8)
	rand.Read(b)
	e := &Events{epoch: hex.EncodeToString(b), next: 1}
	e.Add(ProcessEvent{Kind: "opened"})
	return e
}

func eventBytes(ev ProcessEvent) int {
	return 64 + len(ev.Kind) + len(ev.ID) + len(ev.Command) + len(ev.Reason)
}

// Add keeps ev, numbered next.
func (e *Events) Add(ev ProcessEvent) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ev.Seq = e.next
	e.next++
	e.evs = append(e.evs, ev)
	e.bytes += eventBytes(ev)
	for len(e.evs) > 1 && (len(e.evs) > MaxEvents || e.bytes > MaxEventBytes) {
		if e.evs[0].Kind != "dropped" {
			e.bytes -= eventBytes(e.evs[0])
			e.evs[0] = ProcessEvent{Seq: e.evs[0].Seq, Kind: "dropped", Bytes: 1}
			e.bytes += eventBytes(e.evs[0])
			continue
		}
		if len(e.evs) == 2 { // only the newest is left beside the count: keep it
			break
		}
		old := e.evs[1]
		e.bytes -= eventBytes(old)
		e.evs[0].Seq, e.evs[0].Bytes = old.Seq, e.evs[0].Bytes+1
		e.evs = append(e.evs[:1], e.evs[2:]...)
	}
}

// Ack forgets the events up to seq of epoch (the gateway recorded them);
// an ack of another epoch (an earlier opening of the sandbox) is ignored.
func (e *Events) Ack(epoch string, seq uint64) {
	if epoch != e.epoch {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for n < len(e.evs) && e.evs[n].Seq <= seq {
		e.bytes -= eventBytes(e.evs[n])
		n++
	}
	e.evs = append(e.evs[:0], e.evs[n:]...)
}

// Check implements the engine's ResultChecker: every event not
// acknowledged goes with res (they stay kept).
func (e *Events) Check(_ context.Context, _ tool.Definition, _ tool.Call, res tool.Result) tool.Result {
	if evs, ok := e.Pending(); ok {
		res.SetMeta(MetaProcessEvents, evs)
	}
	return res
}

// Pending returns the events not acknowledged (they stay kept); false:
// none.
func (e *Events) Pending() (ProcessEvents, bool) {
	e.mu.Lock()
	evs := append([]ProcessEvent(nil), e.evs...)
	e.mu.Unlock()
	return ProcessEvents{Epoch: e.epoch, Events: evs}, len(evs) > 0
}

// DeletedEvents is the body of the answer to DELETE /sandboxes/{id} when
// the sandbox kept process events no result carried (those after its last
// call, and the ends of the processes the delete stopped): 200 with it,
// else 204 (a 500, the workspace not removed, carries it too).
type DeletedEvents struct {
	ProcessEvents ProcessEvents `json:"process_events"`
}

// Ack is the AckHeader value acknowledging epoch's events up to seq.
func Ack(epoch string, seq uint64) string { return fmt.Sprintf("%s:%d", epoch, seq) }

// ParseAck reads an AckHeader value.
func ParseAck(v string) (epoch string, seq uint64, ok bool) {
	epoch, n, ok := strings.Cut(v, ":")
	if !ok || epoch == "" {
		return "", 0, false
	}
	seq, err := strconv.ParseUint(n, 10, 64)
	return epoch, seq, err == nil
}
