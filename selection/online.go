package selection

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/toolgate/toolgate/tool"
)

// UsageLog keeps usage records (JSON of Usage) where every replica reads
// them: package store has one in bbolt and one in Redis. Records are
// appended and read in order from a cursor ("" for the start).
type UsageLog interface {
	AppendUsage(ctx context.Context, record []byte) error
	// ReadUsage returns the records appended after cursor, oldest first,
	// and the cursor after the last of them (cursor itself when none).
	ReadUsage(ctx context.Context, cursor string) (records [][]byte, next string, err error)
}

// MemoryUsage is a UsageLog in the process: what a single process learns
// when there is no store.
type MemoryUsage struct {
	mu      sync.Mutex
	records [][]byte
}

// AppendUsage implements UsageLog.
func (m *MemoryUsage) AppendUsage(_ context.Context, record []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.records = append(m.records, slices.Clone(record))
	return nil
}

// ReadUsage implements UsageLog; the cursor is a count of records.
func (m *MemoryUsage) ReadUsage(_ context.Context, cursor string) ([][]byte, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, _ := strconv.Atoi(cursor)
	n = min(max(n, 0), len(m.records))
	return slices.Clone(m.records[n:]), strconv.Itoa(len(m.records)), nil
}

// Learning configures how tool_search learns from use (DeferOptions.Learn).
type Learning struct {
	// Log keeps the records; nil: a MemoryUsage of this Deferred.
	Log UsageLog
	// Options are those of Index.Learn (half-life, weight).
	Options LearnOptions
	// Window is how many calls after a search by the same caller may
	// teach it; 0: 3.
	Window int
	// Boost, when set, says whether a tool's learned score may count for
	// a caller; a tool it refuses (quarantined, say) ranks by its text
	// alone. Tools Visible hides are never found at all.
	Boost func(tool.Definition, tool.Call) bool
	// OnHit, when set, is told of each learned pair: the rank (1-based) of
	// the called tool in the search before it, 0 when it was not found.
	OnHit func(Hit)
	// Logger reports a log that cannot be read or written; nil: slog.Default().
	Logger *slog.Logger
}

// Hit is what one search followed by a successful call says about the
// ranking: the usage record it made, and where the search had the tool.
type Hit struct {
	Usage
	Session string
	Rank    int // the tool's rank in the search's results (1 = first), 0 if not among them
}

// caller is who searched: principal and session (or conversation).
type caller struct{ principal, session string }

// pendingSearch is a caller's last search, waiting for the calls after it.
type pendingSearch struct {
	query  string
	ranked []string
	left   int             // calls that may still teach
	taught map[string]bool // tools already recorded for this search
}

// maxPending bounds the callers whose last search is remembered.
const maxPending = 4096

// learner is the state of a Deferred that learns.
type learner struct {
	cfg     Learning
	mu      sync.Mutex
	pending map[caller]*pendingSearch
	cursor  string
	records []Usage
	fresh   bool // records changed since the Learned was built
}

// searched remembers what a caller's search ranked; the query comes with
// Observe, as the audit record holds it (redacted).
func (l *learner) searched(c caller, ranked []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.pending) >= maxPending {
		for k := range l.pending { // drop any one: a bound, not a policy
			delete(l.pending, k)
			break
		}
	}
	l.pending[c] = &pendingSearch{ranked: ranked, left: l.window(), taught: map[string]bool{}}
}

func (l *learner) window() int {
	if l.cfg.Window > 0 {
		return l.cfg.Window
	}
	return 3
}

// Observed is one finished call as the audit log records it.
type Observed struct {
	Time      time.Time
	Principal string
	Session   string
	Tool      string
	Arguments json.RawMessage // as recorded: secrets redacted
	OK        bool            // the call ran and succeeded
}

// Observe tells d of a finished call (the CLI feeds it the audit records).
// A tool_search's query is kept with what it ranked; a successful call of
// another tool by the same caller within the next Window calls becomes a
// usage record. A failed or refused call teaches nothing but counts.
func (d *Deferred) Observe(ctx context.Context, ev Observed) {
	l := d.learn
	if l == nil {
		return
	}
	c := caller{ev.Principal, ev.Session}
	l.mu.Lock()
	p := l.pending[c]
	if ev.Tool == ToolSearchName {
		if p != nil && p.query == "" && ev.OK {
			var in toolSearchIn
			if json.Unmarshal(ev.Arguments, &in) == nil {
				p.query = in.Query
			}
		}
		l.mu.Unlock()
		return
	}
	if p == nil || p.query == "" {
		l.mu.Unlock()
		return
	}
	p.left--
	if p.left <= 0 {
		delete(l.pending, c)
	}
	if !ev.OK || p.taught[ev.Tool] {
		l.mu.Unlock()
		return
	}
	p.taught[ev.Tool] = true
	rank := slices.Index(p.ranked, ev.Tool) + 1
	query := p.query
	l.mu.Unlock()

	def, ok := d.definition(ev.Tool)
	if !ok {
		return // not a tool of the catalogue (tool_search, a kept tool)
	}
	t := ev.Time
	if t.IsZero() {
		t = time.Now()
	}
	u := Usage{Query: query, Tool: ev.Tool, Principal: ev.Principal, Time: t.UTC(), Definition: DefinitionHash(def)}
	if l.cfg.OnHit != nil {
		l.cfg.OnHit(Hit{Usage: u, Session: ev.Session, Rank: rank})
	}
	rec, _ := json.Marshal(u)
	if err := l.cfg.Log.AppendUsage(ctx, rec); err != nil {
		l.logger().Warn("tool search: a usage record was not kept", "err", err)
	}
}

func (l *learner) logger() *slog.Logger {
	if l.cfg.Logger != nil {
		return l.cfg.Logger
	}
	return slog.Default()
}

// refresh reads the records appended since the last read; it reports
// whether there were any.
func (l *learner) refresh(ctx context.Context) {
	recs, next, err := l.cfg.Log.ReadUsage(ctx, l.cursor)
	if err != nil {
		l.logger().Warn("tool search: usage records cannot be read; ranking with what was read before", "err", err)
		return
	}
	l.cursor = next
	for _, r := range recs {
		var u Usage
		if json.Unmarshal(r, &u) == nil && u.Query != "" && u.Tool != "" {
			l.records = append(l.records, u)
			l.fresh = true
		}
	}
	// Records far older than the half-life weigh nothing: forget them.
	if half := l.cfg.Options.HalfLife; half >= 0 && len(l.records) > 0 {
		if half == 0 {
			half = DefaultHalfLife
		}
		cut := time.Now().Add(-12 * half)
		l.records = slices.DeleteFunc(l.records, func(u Usage) bool { return !u.Time.IsZero() && u.Time.Before(cut) })
	}
}

// Usage returns the records d has read so far.
func (d *Deferred) Usage() []Usage {
	if d.learn == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.learn.records)
}

// definition returns the definition of a catalogue tool as the index has it.
func (d *Deferred) definition(name string) (tool.Definition, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.known[name] {
		return tool.Definition{}, false
	}
	for _, def := range d.defs {
		if def.Name == name {
			return def, true
		}
	}
	return tool.Definition{}, false
}
