package trust

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate/internal/atomicfile"
)

// PinFile is the JSON shape of a pin file: per upstream, its identity and
// its tools.
type PinFile struct {
	Version   int                      `json:"version"`
	Upstreams map[string]*UpstreamPins `json:"upstreams"`
}

// pinVersion is the format version this package writes and reads.
const pinVersion = 1

// UpstreamPins is what is pinned of one upstream.
type UpstreamPins struct {
	Identity Identity `json:"identity"`
	// PendingIdentity is a changed identity (command line, executable,
	// URL) seen since, waiting for a person's approval: until then every
	// tool of the upstream is quarantined.
	PendingIdentity *Identity `json:"pending_identity,omitempty"`
	PendingSince    time.Time `json:"pending_since,omitzero"`
	FirstSeen       time.Time `json:"first_seen"`
	ApprovedBy      string    `json:"approved_by"`
	ApprovedAt      time.Time `json:"approved_at"`
	// Held is set when the gateway stopped the upstream for what it did
	// (its box refused too many accesses in one session): every tool of
	// it is then blocked, whatever the policy's actions, until a person
	// approves the upstream again.
	Held  *Hold               `json:"held,omitempty"`
	Tools map[string]*ToolPin `json:"tools"`
}

// Hold is why and since when an upstream is held (UpstreamPins.Held).
type Hold struct {
	Why   string    `json:"why"`
	Since time.Time `json:"since"`
}

// ToolPin is one tool of an upstream: its pinned definition (Hash empty
// for a tool never approved), and a changed one waiting for approval.
type ToolPin struct {
	Hash       string          `json:"hash,omitempty"`
	Definition json.RawMessage `json:"definition,omitempty"`
	FirstSeen  time.Time       `json:"first_seen"`
	ApprovedBy string          `json:"approved_by,omitempty"`
	ApprovedAt time.Time       `json:"approved_at,omitzero"`
	Verdict    Verdict         `json:"verdict,omitempty"` // the scan of Definition
	Findings   []Finding       `json:"findings,omitempty"`
	RemovedAt  time.Time       `json:"removed_at,omitzero"` // the upstream stopped listing it
	Pending    *Candidate      `json:"pending,omitempty"`
}

// Candidate is a definition seen but not approved.
type Candidate struct {
	Hash       string          `json:"hash"`
	Definition json.RawMessage `json:"definition"`
	SeenAt     time.Time       `json:"seen_at"`
	Why        string          `json:"why"`
	Verdict    Verdict         `json:"verdict"`
	Findings   []Finding       `json:"findings,omitempty"`
}

// FirstUse is the approver recorded for what was pinned on first sight.
const FirstUse = "trust-on-first-use"

// State is where a tool stands.
type State string

const (
	Pinned      State = "pinned"      // listed as pinned
	Quarantined State = "quarantined" // new, changed, of a changed upstream, or flagged: see its Action
	Removed     State = "removed"     // the upstream no longer lists it
)

// Action is what a quarantined tool gets (the policy's trust.on_change
// and trust.scan).
type Action string

const (
	Block Action = "block" // not listed, not callable
	Ask   Action = "ask"   // listed; each call asks a person
	Warn  Action = "warn"  // listed and callable; audited
)

var strictness = map[Action]int{"": 0, Warn: 1, Ask: 2, Block: 3}

// Stricter returns the stricter of two actions (block > ask > warn > "").
func Stricter(a, b Action) Action {
	if strictness[b] > strictness[a] {
		return b
	}
	return a
}

// Settings say what quarantined and flagged tools get.
type Settings struct {
	// OnChange is the action for a new or changed tool, or any tool of a
	// changed upstream ("" : Block).
	OnChange Action
	// Scan returns the action for a scanner verdict ("" : none; nil: the
	// default, block malicious and ask for suspicious tools).
	Scan func(Verdict) Action
}

func (s Settings) change() Action {
	if s.OnChange == "" {
		return Block
	}
	return s.OnChange
}

func (s Settings) scan(v Verdict) Action {
	if s.Scan != nil {
		return s.Scan(v)
	}
	switch v {
	case Malicious:
		return Block
	case Suspicious:
		return Ask
	}
	return ""
}

// Listing is what an upstream lists now.
type Listing struct {
	Upstream string
	Identity Identity
	Tools    []ToolDef
}

// Standing is where one listed tool stands after a review.
type Standing struct {
	State    State
	Action   Action    // for Quarantined
	Why      string    // why it is quarantined, for people and the model
	Verdict  Verdict   // the scan of the listed definition ("" when not scanned: pinned as it is)
	Findings []Finding // the scan's findings
}

// Event is something a review or an approval changed, for the audit log.
type Event struct {
	Kind     string // first_use, pinned, quarantined, identity_changed, removed, approved, reverted
	Upstream string
	Tool     string // "" for the upstream itself
	Action   Action
	Why      string
	Hash     string // the definition's pin
	Previous string // the pin it replaces, if any
	Verdict  Verdict
	Findings []Finding
}

// Pins is a pin file, read and written under an exclusive lock so that
// several gateways and `toolgate trust approve` can share it. A Pins with
// no path keeps its pins in memory. It is safe for concurrent use.
type Pins struct {
	path string
	mu   sync.Mutex
	mem  *PinFile // without a path
}

// OpenPins returns the pins kept at path ("" : in memory only). The file
// is read at each use; it need not exist yet.
func OpenPins(path string) *Pins { return &Pins{path: path} }

// Path is the pin file ("" : in memory).
func (p *Pins) Path() string { return p.path }

// Load reads the pin file (an empty one when it does not exist). A file
// that is not a pin file is an error: nothing is trusted without it.
func (p *Pins) Load() (*PinFile, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.path == "" {
		return clonePins(p.memory()), nil
	}
	var f *PinFile
	err := withLock(p.path, func() (err error) {
		f, err = readPins(p.path)
		return err
	})
	return f, err
}

func (p *Pins) memory() *PinFile {
	if p.mem == nil {
		p.mem = &PinFile{Version: pinVersion, Upstreams: map[string]*UpstreamPins{}}
	}
	return p.mem
}

// update runs fn on the pin file under the lock and writes it back when
// fn changed it.
func (p *Pins) update(fn func(*PinFile) error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.path == "" {
		f := clonePins(p.memory())
		if err := fn(f); err != nil {
			return err
		}
		p.mem = f
		return nil
	}
	return withLock(p.path, func() error {
		f, err := readPins(p.path)
		if err != nil {
			return err
		}
		before, _ := json.Marshal(f)
		if err := fn(f); err != nil {
			return err
		}
		after, err := json.MarshalIndent(f, "", "  ")
		if err != nil {
			return err
		}
		if compact(after) == string(before) {
			return nil
		}
		return writeAtomic(p.path, append(after, '\n'))
	})
}

func compact(b []byte) string {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return string(b)
	}
	return out.String()
}

func clonePins(f *PinFile) *PinFile {
	data, _ := json.Marshal(f)
	var out PinFile
	json.Unmarshal(data, &out)
	if out.Upstreams == nil {
		out.Upstreams = map[string]*UpstreamPins{}
	}
	return &out
}

// readPins reads a pin file; a missing or empty file is an empty one.
func readPins(path string) (*PinFile, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) || err == nil && len(bytes.TrimSpace(data)) == 0 {
		return &PinFile{Version: pinVersion, Upstreams: map[string]*UpstreamPins{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("trust: reading the pin file: %w", err)
	}
	var f PinFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err = dec.Decode(&f)
	if err == nil && dec.More() {
		err = errors.New("data after the JSON object")
	}
	if err != nil {
		return nil, fmt.Errorf("trust: the pin file %s is damaged (%v): no upstream tool is trusted until it is repaired, or moved aside to pin every tool again on first use", path, err)
	}
	if f.Version != pinVersion {
		return nil, fmt.Errorf("trust: the pin file %s has version %d; this toolgate reads version %d", path, f.Version, pinVersion)
	}
	if f.Upstreams == nil {
		f.Upstreams = map[string]*UpstreamPins{}
	}
	for name, up := range f.Upstreams {
		if up == nil {
			return nil, fmt.Errorf("trust: the pin file %s is damaged (upstream %q is null)", path, name)
		}
		if up.Tools == nil {
			up.Tools = map[string]*ToolPin{}
		}
		for tn, t := range up.Tools {
			if t == nil {
				return nil, fmt.Errorf("trust: the pin file %s is damaged (tool %s/%s is null)", path, name, tn)
			}
		}
	}
	return &f, nil
}

// writeAtomic replaces path with data, mode 0600 (atomicfile), making
// its folder (0700) first.
func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("trust: %w", err)
	}
	if err := atomicfile.Write(path, data, 0o600); err != nil {
		return fmt.Errorf("trust: writing the pin file: %w", err)
	}
	return nil
}

// withLock runs fn holding an exclusive lock on path's lock file
// (path + ".lock"), waiting for other holders. The lock file stays (empty,
// mode 0600): the lock is its inode, which every holder must share, and
// path itself cannot be it (each write renames a new file over it).
// Removing the lock file when done would let a waiter lock the removed
// inode while a newcomer makes and locks a new one: two writers at once.
func withLock(path string, fn func() error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("trust: %w", err)
	}
	lf, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("trust: locking the pin file: %w", err)
	}
	defer lf.Close()
	if err := lockFile(lf); err != nil {
		return fmt.Errorf("trust: locking the pin file: %w", err)
	}
	defer unlockFile(lf)
	return fn()
}

// Review compares what the upstreams list now with the pins, records what
// changed (first use pins everything the scan lets through; a new or
// changed tool, or any tool of a changed upstream, becomes a candidate
// waiting for approval; a tool no longer listed is marked removed) and
// returns where each listed tool stands, by upstream and tool name, with
// the events to audit. Tools not yet pinned are scanned, each with every
// other listed tool and every upstream as context. now stamps what is
// recorded.
func (p *Pins) Review(listings []Listing, s Settings, now time.Time) (map[string]map[string]Standing, []Event, error) {
	var servers []string
	var refs []ToolRef
	for _, l := range listings {
		servers = append(servers, l.Upstream)
		for _, d := range l.Tools {
			refs = append(refs, ToolRef{Server: l.Upstream, Name: d.Name})
		}
	}
	out := map[string]map[string]Standing{}
	var events []Event
	err := p.update(func(f *PinFile) error {
		out, events = map[string]map[string]Standing{}, nil
		for _, l := range listings {
			st, ev, err := review(f, l, s, ScanContext{Server: l.Upstream, Tools: refs, Servers: servers}, now)
			if err != nil {
				return err
			}
			out[l.Upstream], events = st, append(events, ev...)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return out, events, nil
}

// review is Review of one upstream.
func review(f *PinFile, l Listing, s Settings, sc ScanContext, now time.Time) (map[string]Standing, []Event, error) {
	var events []Event
	ev := func(e Event) {
		e.Upstream = l.Upstream
		events = append(events, e)
	}
	up := f.Upstreams[l.Upstream]
	first := up == nil
	if first {
		up = &UpstreamPins{Identity: l.Identity, FirstSeen: now, ApprovedBy: FirstUse, ApprovedAt: now, Tools: map[string]*ToolPin{}}
		f.Upstreams[l.Upstream] = up
		ev(Event{Kind: "first_use", Why: "first sight of this upstream: its identity and the tools the scan lets through are pinned"})
	}
	if up.Identity.Equal(Identity{}) {
		up.Identity = l.Identity // held before it was ever listed (Hold)
	}
	idWhy := ""
	switch {
	case up.Identity.Equal(l.Identity):
		if up.PendingIdentity != nil {
			up.PendingIdentity, up.PendingSince = nil, time.Time{}
			ev(Event{Kind: "reverted", Why: "the upstream is again as pinned"})
		}
	case up.Identity.sameButNarrower(l.Identity):
		// A box that grants less needs no approval: the pin takes it, so
		// that granting the old again is a widening.
		up.Identity.Box, up.Identity.Resolved = l.Identity.Box, l.Identity.Resolved
		up.PendingIdentity, up.PendingSince = nil, time.Time{}
		ev(Event{Kind: "narrowed", Why: "the upstream's box grants less than pinned, or its launcher's resolution is pinned for the first time"})
	default:
		idWhy = "the upstream changed since it was pinned: " + up.Identity.Change(l.Identity)
		if up.PendingIdentity == nil || !up.PendingIdentity.Equal(l.Identity) {
			id := l.Identity
			up.PendingIdentity, up.PendingSince = &id, now
			ev(Event{Kind: "identity_changed", Action: s.change(), Why: idWhy})
		}
	}

	if up.Held != nil {
		idWhy = join(idWhy, "held since "+up.Held.Since.UTC().Format(time.RFC3339)+": "+up.Held.Why)
	}

	out := map[string]Standing{}
	listed := map[string]bool{}
	for _, def := range l.Tools {
		if listed[def.Name] {
			return nil, nil, fmt.Errorf("trust: upstream %s lists two tools named %q", l.Upstream, def.Name)
		}
		listed[def.Name] = true
		h, err := Hash(def)
		if err != nil {
			return nil, nil, err
		}
		raw, _ := canonicalDef(def)
		t := up.Tools[def.Name]
		if t != nil && t.Hash == h {
			if !t.RemovedAt.IsZero() {
				t.RemovedAt = time.Time{}
			}
			if t.Pending != nil {
				t.Pending = nil
				ev(Event{Kind: "reverted", Tool: def.Name, Hash: h, Why: "the tool is again as pinned"})
			}
			if idWhy == "" {
				out[def.Name] = Standing{State: Pinned, Verdict: t.Verdict, Findings: t.Findings}
				continue
			}
		}
		others := sc
		others.Tools = slices.DeleteFunc(slices.Clone(sc.Tools), func(r ToolRef) bool { return r.Server == l.Upstream && r.Name == def.Name })
		rep := Scan(def, others)
		action := s.scan(rep.Verdict)
		why := ""
		if action != "" {
			why = fmt.Sprintf("the scan found it %s (%s)", rep.Verdict, kinds(rep.Findings))
		}
		var change string
		switch {
		case first:
		case idWhy != "" && t != nil && t.Hash != "" && t.Hash != h:
			change = idWhy + "; and its definition changed"
		case idWhy != "":
			change = idWhy
		case t == nil:
			change = "a new tool, not listed when the upstream was pinned"
		case t.Hash == "":
			change = "a new tool, not approved yet"
		default:
			change = "its definition changed since it was pinned"
		}
		if change != "" {
			action = Stricter(action, s.change())
			why = join(change, why)
		}
		if up.Held != nil {
			action = Block
		}
		if t == nil {
			t = &ToolPin{FirstSeen: now}
			up.Tools[def.Name] = t
		}
		t.RemovedAt = time.Time{}
		if first && strictness[action] <= strictness[Warn] {
			t.Hash, t.Definition, t.ApprovedBy, t.ApprovedAt, t.Verdict, t.Findings = h, raw, FirstUse, now, rep.Verdict, rep.Findings
			ev(Event{Kind: "pinned", Tool: def.Name, Action: action, Hash: h, Why: join("pinned on first use", why), Verdict: rep.Verdict, Findings: rep.Findings})
			out[def.Name] = Standing{State: Pinned, Verdict: rep.Verdict, Findings: rep.Findings}
			continue
		}
		if t.Hash == h && idWhy != "" {
			// The definition is as pinned; only the upstream changed.
			out[def.Name] = Standing{State: Quarantined, Action: action, Why: why, Verdict: rep.Verdict, Findings: rep.Findings}
			continue
		}
		if t.Pending == nil || t.Pending.Hash != h {
			t.Pending = &Candidate{Hash: h, Definition: raw, SeenAt: now, Why: why, Verdict: rep.Verdict, Findings: rep.Findings}
			ev(Event{Kind: "quarantined", Tool: def.Name, Action: action, Hash: h, Previous: t.Hash, Why: why, Verdict: rep.Verdict, Findings: rep.Findings})
		}
		out[def.Name] = Standing{State: Quarantined, Action: action, Why: why, Verdict: rep.Verdict, Findings: rep.Findings}
	}
	for _, name := range slices.Sorted(maps.Keys(up.Tools)) {
		t := up.Tools[name]
		if listed[name] {
			continue
		}
		if t.Hash == "" { // never approved: nothing to remember
			delete(up.Tools, name)
			ev(Event{Kind: "removed", Tool: name, Why: "the upstream no longer lists this tool, which was never approved"})
			continue
		}
		if t.RemovedAt.IsZero() {
			t.RemovedAt, t.Pending = now, nil
			ev(Event{Kind: "removed", Tool: name, Hash: t.Hash, Why: "the upstream no longer lists this tool"})
		}
	}
	return out, events, nil
}

func join(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// kinds names the kinds of findings, for a one-line reason.
func kinds(fs []Finding) string {
	var ks []string
	for _, f := range fs {
		if !slices.Contains(ks, f.Kind) {
			ks = append(ks, f.Kind)
		}
	}
	if len(ks) == 0 {
		return "no findings"
	}
	return strings.Join(ks, ", ")
}

// Approve pins what is waiting for approval: target is UPSTREAM/TOOL (one
// tool), or UPSTREAM/* or UPSTREAM (the upstream's changed identity and
// all its waiting tools). by names the person. It returns the events, one
// per thing approved; approving nothing is an error that says why.
func (p *Pins) Approve(target, by string, now time.Time) ([]Event, error) {
	upName, toolName, _ := strings.Cut(target, "/")
	if upName == "" {
		return nil, fmt.Errorf("trust: name what to approve as UPSTREAM/TOOL or UPSTREAM/*")
	}
	var events []Event
	err := p.update(func(f *PinFile) error {
		events = nil
		up := f.Upstreams[upName]
		if up == nil {
			return fmt.Errorf("trust: no upstream named %q is pinned (toolgate trust list shows them)", upName)
		}
		all := toolName == "" || toolName == "*"
		if !all {
			t := up.Tools[toolName]
			switch {
			case t == nil:
				return fmt.Errorf("trust: upstream %s has no tool named %q (toolgate trust list shows them)", upName, toolName)
			case up.Held != nil:
				return fmt.Errorf("trust: upstream %s is held (%s): approve it with all its tools: toolgate trust approve %s/*", upName, up.Held.Why, upName)
			case up.PendingIdentity != nil:
				return fmt.Errorf("trust: upstream %s itself changed (%s): review it with toolgate trust diff %s and approve it with all its tools: toolgate trust approve %s/*", upName, up.Identity.Change(*up.PendingIdentity), upName, upName)
			case t.Pending == nil:
				return fmt.Errorf("trust: %s/%s is not waiting for approval (it is %s)", upName, toolName, stateOf(up, t).State)
			}
		}
		if up.Held != nil && all {
			events = append(events, Event{Kind: "approved", Upstream: upName, Why: "the held upstream was approved by " + by + " (it was held: " + up.Held.Why + ")"})
			up.Held = nil
			up.ApprovedBy, up.ApprovedAt = by, now
		}
		if up.PendingIdentity != nil {
			events = append(events, Event{Kind: "approved", Upstream: upName, Why: "the changed upstream was approved by " + by + ": " + up.Identity.Change(*up.PendingIdentity)})
			up.Identity, up.PendingIdentity, up.PendingSince = *up.PendingIdentity, nil, time.Time{}
			up.ApprovedBy, up.ApprovedAt = by, now
		}
		for _, name := range slices.Sorted(maps.Keys(up.Tools)) {
			t := up.Tools[name]
			if t.Pending == nil || !all && name != toolName {
				continue
			}
			c := t.Pending
			events = append(events, Event{Kind: "approved", Upstream: upName, Tool: name, Hash: c.Hash, Previous: t.Hash, Why: "approved by " + by + " (it was quarantined: " + c.Why + ")", Verdict: c.Verdict, Findings: c.Findings})
			t.Hash, t.Definition, t.Verdict, t.Findings, t.Pending = c.Hash, c.Definition, c.Verdict, c.Findings, nil
			t.ApprovedBy, t.ApprovedAt = by, now
		}
		if len(events) == 0 {
			return fmt.Errorf("trust: nothing of upstream %s is waiting for approval", upName)
		}
		return nil
	})
	return events, err
}

// Hold blocks every tool of upstream until a person approves it
// (toolgate trust approve UPSTREAM/*): the gateway calls it when it
// stopped the upstream for what it did; why says what. An upstream not
// pinned yet is pinned as held. Holding a held upstream keeps the first
// reason.
func (p *Pins) Hold(upstream, why string, now time.Time) error {
	return p.update(func(f *PinFile) error {
		up := f.Upstreams[upstream]
		if up == nil {
			up = &UpstreamPins{FirstSeen: now, Tools: map[string]*ToolPin{}}
			f.Upstreams[upstream] = up
		}
		if up.Held == nil {
			up.Held = &Hold{Why: why, Since: now}
		}
		return nil
	})
}

// Entry is one tool of a pin file as `toolgate trust list` shows it.
type Entry struct {
	Upstream string    `json:"upstream"`
	Tool     string    `json:"tool"`
	State    State     `json:"state"`
	Why      string    `json:"why,omitempty"`
	Verdict  Verdict   `json:"verdict,omitempty"`
	Findings []Finding `json:"findings,omitempty"`
	Hash     string    `json:"hash,omitempty"`    // pinned
	Pending  string    `json:"pending,omitempty"` // waiting for approval
}

// Entries lists every tool of f, by upstream and tool name.
func (f *PinFile) Entries() []Entry {
	var out []Entry
	for _, un := range slices.Sorted(maps.Keys(f.Upstreams)) {
		up := f.Upstreams[un]
		for _, tn := range slices.Sorted(maps.Keys(up.Tools)) {
			e := stateOf(up, up.Tools[tn])
			e.Upstream, e.Tool = un, tn
			out = append(out, e)
		}
	}
	return out
}

// stateOf says where a pinned tool stands, without a listing.
func stateOf(up *UpstreamPins, t *ToolPin) Entry {
	e := Entry{State: Pinned, Hash: t.Hash, Verdict: t.Verdict, Findings: t.Findings}
	switch {
	case !t.RemovedAt.IsZero():
		e.State, e.Why = Removed, "the upstream no longer lists it (since "+t.RemovedAt.UTC().Format(time.RFC3339)+")"
	case t.Pending != nil:
		e.State, e.Why, e.Pending, e.Verdict, e.Findings = Quarantined, t.Pending.Why, t.Pending.Hash, t.Pending.Verdict, t.Pending.Findings
	case up.Held != nil:
		e.State, e.Why = Quarantined, "held: "+up.Held.Why
	case up.PendingIdentity != nil:
		e.State, e.Why = Quarantined, "the upstream changed since it was pinned: "+up.Identity.Change(*up.PendingIdentity)
	}
	return e
}
