package console

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate/tool"
)

// Activity counts the calls an engine runs: those in flight and, per
// tool, how many started in the last minute and hour and how they ended.
// It is an engine Limiter that never refuses (put it in the chain with
// engine.ChainLimiters); it sees the calls that passed the policy, the
// approvals and the other limits.
type Activity struct {
	mu      sync.Mutex
	next    uint64
	running map[uint64]Running
	tools   map[string]*toolActivity
}

// Running is a call in flight.
type Running struct {
	Tool, Principal, Session string
	Since                    time.Time
}

type toolActivity struct {
	starts []time.Time // of the last hour, oldest first
	errors map[string]int
	total  int
}

// NewActivity returns an empty Activity.
func NewActivity() *Activity {
	return &Activity{running: map[uint64]Running{}, tools: map[string]*toolActivity{}}
}

// Acquire counts the call as running until its release.
func (a *Activity) Acquire(_ context.Context, call tool.Call, def tool.Definition) (func(tool.Result), *tool.Error) {
	now := time.Now()
	a.mu.Lock()
	a.next++
	id := a.next
	a.running[id] = Running{Tool: def.Name, Principal: call.Principal, Session: call.Session, Since: now}
	t := a.tools[def.Name]
	if t == nil {
		t = &toolActivity{errors: map[string]int{}}
		a.tools[def.Name] = t
	}
	t.total++
	t.starts = append(dropBefore(t.starts, now.Add(-time.Hour)), now)
	a.mu.Unlock()
	return func(res tool.Result) {
		a.mu.Lock()
		delete(a.running, id)
		if res.Error != nil {
			t.errors[string(res.Error.Type)]++
		}
		a.mu.Unlock()
	}, nil
}

func dropBefore(ts []time.Time, t time.Time) []time.Time {
	i, _ := slices.BinarySearchFunc(ts, t, func(a, b time.Time) int { return a.Compare(b) })
	return ts[i:]
}

// ToolRate is one tool's activity.
type ToolRate struct {
	Tool                 string
	LastMinute, LastHour int
	Total                int
	Errors               string // "timeout ×2, internal ×1"
}

// Snapshot returns the calls in flight, oldest first, and each tool's
// rates, busiest first.
func (a *Activity) Snapshot() ([]Running, []ToolRate) {
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	run := make([]Running, 0, len(a.running))
	for _, r := range a.running {
		run = append(run, r)
	}
	slices.SortFunc(run, func(x, y Running) int { return x.Since.Compare(y.Since) })
	var rates []ToolRate
	for name, t := range a.tools {
		t.starts = dropBefore(t.starts, now.Add(-time.Hour))
		m := len(t.starts) - len(dropBefore(t.starts, now.Add(-time.Minute)))
		rates = append(rates, ToolRate{Tool: name, LastMinute: len(t.starts) - m, LastHour: len(t.starts), Total: t.total, Errors: countsText(t.errors)})
	}
	slices.SortFunc(rates, func(x, y ToolRate) int {
		if x.LastHour != y.LastHour {
			return y.LastHour - x.LastHour
		}
		return strings.Compare(x.Tool, y.Tool)
	})
	return run, rates
}

func countsText(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+" ×"+strconv.Itoa(m[k]))
	}
	return strings.Join(parts, ", ")
}

// guarded are the error types of calls the limits, the loop guard, the
// breaker or the sandbox stopped.
var guarded = []tool.ErrorType{tool.RateLimited, tool.LoopDetected, tool.CircuitOpen, tool.SandboxViolation}

// guardRow counts, from the audit log, how often a guard stopped a
// principal's calls of a tool in the last hour.
type guardRow struct {
	Principal, Tool, Kind string
	Count                 int
	Last                  time.Time
}

func (c *Console) activityPage(w http.ResponseWriter, r *http.Request, u User) {
	data := map[string]any{"NoTracker": c.o.Activity == nil}
	if c.o.Activity != nil {
		data["Running"], data["Rates"] = c.o.Activity.Snapshot()
	}
	rows := map[[3]string]*guardRow{}
	for _, rec := range c.auditSince(time.Now().Add(-time.Hour)) {
		if !slices.Contains(guarded, tool.ErrorType(rec.ErrorType)) {
			continue
		}
		k := [3]string{rec.Principal, rec.Tool, rec.ErrorType}
		if rows[k] == nil {
			rows[k] = &guardRow{Principal: rec.Principal, Tool: rec.Tool, Kind: rec.ErrorType}
		}
		rows[k].Count++
		rows[k].Last = rec.Time
	}
	var guards []guardRow
	for _, g := range rows {
		guards = append(guards, *g)
	}
	slices.SortFunc(guards, func(x, y guardRow) int { return y.Last.Compare(x.Last) })
	data["Guards"] = guards
	if c.o.Approvals != nil {
		list, _ := c.o.Approvals.Pending(r.Context())
		data["Waiting"] = len(list)
	}
	c.page(w, r, http.StatusOK, "activity", &u, data)
}
