package procs

import (
	"sync"
	"sync/atomic"
	"time"
)

// Demand narrows a server to one processor while its requests come one at
// a time and widens it while they overlap: a server over HTTP serves many
// clients, and calls that run at once each want a processor, but one
// client's calls, one after the other, hop between goroutines (net/http's
// connection, the MCP session's reader and handler) as a stdio server's
// do, and with more than one processor each hop may wake another thread.
// Changing the processors stops the world, so it is never done per request:
// the process widens once requests overlap (a [Widen], held) and narrows
// again only when a request ends with at most one other still running and
// none has overlapped for Calm (so a burst that ends within Calm leaves
// the process wide, idle or not, until a later request ends). Call
// [Narrow] first; without it, or with
// GOMAXPROCS set in the environment, nothing changes.
//
// A request is counted from Begin to End (every Begin needs its End);
// which requests count is the caller's choice (the CLI's HTTP server
// counts the calls to its MCP endpoint, not a session's GET stream).
type Demand struct {
	// Calm is how long no request has overlapped another before the
	// process narrows again; 0: narrow as soon as they no longer overlap.
	Calm time.Duration

	running atomic.Int64 // requests between Begin and End
	overlap atomic.Int64 // when requests last overlapped: ns since epoch
	wide    atomic.Bool  // done holds a Widen

	mu   sync.Mutex
	done func() // the Widen held while wide
}

// epoch is what overlap counts from (the monotonic clock).
var epoch = time.Now()

// Begin counts a request that starts, widening the process when another is
// running.
func (d *Demand) Begin() {
	if d.running.Add(1) < 2 {
		return
	}
	d.overlap.Store(int64(time.Since(epoch)))
	d.mu.Lock() // an End may be narrowing: it looks at running under mu
	defer d.mu.Unlock()
	if d.done == nil {
		d.done = Widen()
		d.wide.Store(true)
	}
}

// End counts a request that ended, narrowing the process when at most one
// is still running and none overlapped for Calm.
func (d *Demand) End() {
	if d.running.Add(-1) > 1 || !d.wide.Load() || !d.calm() {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done != nil && d.running.Load() <= 1 && d.calm() {
		d.done()
		d.done = nil
		d.wide.Store(false)
	}
}

// calm reports whether no request has overlapped another for Calm.
func (d *Demand) calm() bool {
	return time.Duration(int64(time.Since(epoch))-d.overlap.Load()) >= d.Calm
}
