package exec

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/tool"
)

// With a board (ProcessLimits.Board: the state.redis of the replicas),
// each replica puts there what changed of its processes every
// mirrorEvery (at once for a start), renews its lease every third of
// ProcessLimits.Lease, and answers read_process and list_processes for the
// processes of other replicas from it; write_process and stop_process for
// those are unavailable (retryable), naming the replica that runs them.

// mirrorEvery is how often a replica puts on the board what changed.
const mirrorEvery = time.Second

// boardTail is how much of a process's output the board keeps.
const boardTail = 64 << 10

// boardTimeout bounds each call to the board.
const boardTimeout = 2 * time.Second

// boardPoll is how often a read of another replica's process looks at the
// board again while it waits.
const boardPoll = 250 * time.Millisecond

// incarnation names this registry on the board: the replica's name and a
// random suffix, so that a replica started again under the same name does
// not hold the lease of the processes its previous run left running.
func incarnation(replica string) string {
	if replica == "" {
		replica = "replica"
	}
	var b [4]byte
	rand.Read(b[:])
	return replica + "/" + hex.EncodeToString(b[:])
}

// mirrored is what the board was last told of a process.
type mirrored struct {
	total int64
	state string
	at    time.Time
}

// board is a registry's side of the board; nil without one.
type board struct {
	b       policy.ProcessBoard
	replica string // this registry's incarnation
	lease   time.Duration
	keep    time.Duration

	leased sync.Once
	mu     sync.Mutex // one push at a time; guards told
	told   map[string]mirrored
}

func (bd *board) renew() error {
	ctx, cancel := context.WithTimeout(context.Background(), boardTimeout)
	defer cancel()
	return bd.b.Renew(ctx, bd.replica, bd.lease)
}

// entry is what the board is told of pr.
func (bd *board) entry(pr *process) policy.ProcessEntry {
	st := pr.snapshot()
	e := policy.ProcessEntry{ID: pr.id, Owner: pr.owner, Replica: bd.replica, Name: pr.name, Command: pr.command,
		State: st.name(), ExitCode: -1, Signal: st.signal, Started: pr.started, CPU: st.cpu, TTY: pr.tty}
	if st.exited {
		e.Reason = st.reason
	}
	if st.exitCode != nil {
		e.ExitCode = *st.exitCode
	}
	total := pr.out.size()
	e.Tail, _, e.Total = pr.out.read(max(0, total-boardTail), boardTail)
	return e
}

// push puts on the board the processes whose output or state changed
// since it was last told (all of them when every; a running one at least
// every third of keep, so that its entry does not expire).
//
// The board is called outside bd.mu: a slow one holds up the mirror, never
// a start_process waiting to publish.
func (bd *board) push(list []*process, every bool) {
	now := time.Now()
	var due []policy.ProcessEntry
	bd.mu.Lock()
	for _, pr := range list {
		e := bd.entry(pr)
		t, ok := bd.told[pr.id]
		if ok && !every && t.total == e.Total && t.state == e.State && now.Sub(t.at) < bd.keep/3 {
			continue
		}
		due = append(due, e)
	}
	bd.mu.Unlock()
	for _, e := range due {
		ctx, cancel := context.WithTimeout(context.Background(), boardTimeout)
		err := bd.b.Put(ctx, e, bd.keep)
		cancel()
		if err == nil {
			bd.mu.Lock()
			bd.told[e.ID] = mirrored{total: e.Total, state: e.State, at: now}
			bd.mu.Unlock()
		}
	}
}

// forget drops what was told of processes no longer in the registry.
func (bd *board) forget(ids []string) {
	bd.mu.Lock()
	defer bd.mu.Unlock()
	for _, id := range ids {
		delete(bd.told, id)
	}
}

// publish tells the board of a process that just started (the lease held
// first, so that no reader finds it running without one), and starts the
// mirror with the first.
func (p *Processes) publish(pr *process) {
	bd := p.board
	if bd == nil {
		return
	}
	bd.leased.Do(func() {
		bd.renew()
		go p.mirror()
	})
	bd.push([]*process{pr}, true)
}

// mirror renews the lease and pushes what changed until Close.
func (p *Processes) mirror() {
	bd := p.board
	renewEvery := bd.lease / 3
	t := time.NewTicker(min(mirrorEvery, renewEvery))
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-p.done:
			return
		case now := <-t.C:
			if now.Sub(last) >= renewEvery {
				bd.renew()
				last = now
			}
			bd.push(p.all(), false)
		}
	}
}

// all returns every process of the registry.
func (p *Processes) all() []*process {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*process, 0, len(p.byID))
	for _, pr := range p.byID {
		out = append(out, pr)
	}
	return out
}

// elsewhere returns the board's entry of the process id of o that another
// replica runs. Without a board, or when the board has none of o's, the
// error is not_found as for an unknown id; a board that cannot be reached
// is unavailable.
func (p *Processes) elsewhere(ctx context.Context, o owner, id string) (policy.ProcessEntry, *tool.Error) {
	bd := p.board
	if bd == nil {
		return policy.ProcessEntry{}, p.notFound(id)
	}
	ctx, cancel := context.WithTimeout(ctx, boardTimeout)
	defer cancel()
	e, ok, err := bd.b.Get(ctx, id)
	if err != nil {
		return e, boardDown(err)
	}
	if !ok || e.Owner != o.key || e.Replica == bd.replica {
		return e, p.notFound(id)
	}
	return e, nil
}

func boardDown(err error) *tool.Error {
	return tool.Errorf(tool.Unavailable, "the replicas' shared state cannot be reached: %v", err).WithRetry(time.Second).
		WithSuggestion("retry in a moment")
}

// runsElsewhere is the answer to a write or stop of a process another
// replica runs.
func runsElsewhere(e policy.ProcessEntry, here string) *tool.Error {
	return tool.Errorf(tool.Unavailable, "process %s runs on replica %s and this request reached replica %s", e.ID, e.Replica, here).
		WithRetry(time.Second).WithDetail("replica", e.Replica).
		WithSuggestion("retry: the request may reach that replica next time (routing a conversation to one replica avoids this); read_process and list_processes answer from any replica")
}

// boardOutput is the output of a process as the board holds it.
type boardOutput struct{ e policy.ProcessEntry }

func (b boardOutput) size() int64 { return b.e.Total }

func (b boardOutput) read(cursor int64, n int) ([]byte, int64, int64) {
	total := b.e.Total
	start := total - int64(len(b.e.Tail))
	cursor = min(max(cursor, 0), total)
	from := max(cursor, start)
	end := min(total, from+int64(n))
	return bytes.Clone(b.e.Tail[from-start : end-start]), from, total // the caller's own (output)
}

// entryAnswer is a board entry's state as an answer.
func entryAnswer(e policy.ProcessEntry) ProcessAnswer {
	a := ProcessAnswer{State: e.State, Signal: e.Signal}
	if e.State != "running" {
		a.Reason = e.Reason
	}
	if e.ExitCode >= 0 {
		c := e.ExitCode
		a.ExitCode = &c
	}
	return a
}

// readElsewhere answers read_process for a process another replica runs,
// from the board: waiting up to wait (polling the board) for output after
// cursor, or for until, while it runs.
func (s *set) readElsewhere(ctx context.Context, o owner, e policy.ProcessEntry, in ReadInput, until *regexp.Regexp, wait time.Duration) tool.Result {
	deadline := time.Now().Add(wait)
	for e.State == "running" && time.Now().Before(deadline) {
		out := boardOutput{e}
		if until != nil && outputMatches(out, e.TTY, in.Cursor, until) || until == nil && out.size() > in.Cursor {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(min(boardPoll, time.Until(deadline))):
		}
		if ctx.Err() != nil {
			break
		}
		next, te := s.procs.elsewhere(ctx, o, e.ID)
		if te != nil {
			return errResult(te)
		}
		e = next
	}
	var ans ProcessAnswer
	if e.Withheld != "" {
		// Nothing to read here: the cursor stays where it was.
		ans = entryAnswer(e)
		ans.Cursor, ans.Withheld = in.Cursor, e.Withheld
	} else {
		ans = readOutput(entryAnswer(e), boardOutput{e}, e.TTY, in.Cursor, in.TailLines, min(in.MaxBytes, 64<<10), in.View == "raw")
	}
	ans.Replica = e.Replica
	return s.answer(ans, ans.Cursor > in.Cursor || wait > 0)
}

// listElsewhere returns the processes of o that other replicas run, as the
// board has them, oldest first.
func (p *Processes) listElsewhere(ctx context.Context, o owner) ([]policy.ProcessEntry, *tool.Error) {
	bd := p.board
	if bd == nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, boardTimeout)
	defer cancel()
	list, err := bd.b.List(ctx, o.key)
	if err != nil {
		return nil, boardDown(err)
	}
	list = slices.DeleteFunc(list, func(e policy.ProcessEntry) bool { return e.Replica == bd.replica })
	slices.SortFunc(list, func(a, b policy.ProcessEntry) int { return a.Started.Compare(b.Started) })
	return list, nil
}

// endedElsewhere is the answer to a write to a process of another
// replica that is no longer running; nil while it runs.
func endedElsewhere(e policy.ProcessEntry) *tool.Error {
	if e.State == "running" {
		return nil
	}
	return tool.Errorf(tool.Conflict, "process %s is %s (%s)", e.ID, e.State, e.Reason).
		WithSuggestion("read_process shows its last output; start it again with start_process")
}

// lostLine is what an answer says of a lost process.
func lostLine(replica string) string {
	return fmt.Sprintf("replica %s, which ran it, stopped renewing its lease: it ended with that replica or cannot be reached; start it again if you need it\n", replica)
}
