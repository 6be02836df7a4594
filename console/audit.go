package console

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolgate/toolgate/audit"
)

// filter is the audit page's form.
type filter struct {
	From, To                                string // datetime-local, UTC
	Principal, Tool, Decision, ErrorType, Q string
	Limit                                   int
}

// shownRecords is how many records the audit page shows by default, and at most.
const (
	shownRecords = 200
	maxShown     = 2000
)

func readFilter(r *http.Request) filter {
	q := r.URL.Query()
	f := filter{From: q.Get("from"), To: q.Get("to"), Principal: strings.TrimSpace(q.Get("principal")), Tool: strings.TrimSpace(q.Get("tool")),
		Decision: q.Get("decision"), ErrorType: strings.TrimSpace(q.Get("error")), Q: strings.TrimSpace(q.Get("q")), Limit: shownRecords}
	if n, err := strconv.Atoi(q.Get("limit")); err == nil && n > 0 {
		f.Limit = min(n, maxShown)
	}
	return f
}

// query is the part of f that audit.Select matches.
func (f filter) query() (audit.Query, string) {
	q := audit.Query{Tool: f.Tool, Principal: f.Principal, Decision: f.Decision}
	for _, t := range []struct {
		s   string
		dst *time.Time
	}{{f.From, &q.Since}, {f.To, &q.Until}} {
		if t.s == "" {
			continue
		}
		v, err := parseTime(t.s)
		if err != nil {
			return q, "The time " + strconv.Quote(t.s) + " is not a date and time (2026-01-02T15:04, UTC)."
		}
		*t.dst = v
	}
	return q, ""
}

func parseTime(s string) (time.Time, error) {
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", time.RFC3339Nano, "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Parse(time.RFC3339, s)
}

// shown is a record on the audit page.
type shown struct {
	audit.Record
	Log   string  // the file it is in, for several chains
	JSON  string  // the whole record, indented
	Steps []shown // a plan's or composite's steps, oldest first
}

// groupSteps puts the records of a plan's or a composite tool's steps
// under the record of their call, when it is among recs: a step's call id
// is its call's id, "/", and the step's (orchestrate's ids, nested for a
// step of a step; a step goes under its furthest ancestor shown). Steps
// whose call is not shown (filtered out, or not ended yet) stay on their
// own. recs are newest first; steps are listed oldest first.
func groupSteps(recs []shown) []shown {
	at := make(map[string]int, len(recs))
	for i, r := range recs {
		if r.CallID != "" {
			at[r.CallID] = i
		}
	}
	root := make([]int, len(recs))
	for i, r := range recs {
		root[i] = -1
		for id := r.CallID; ; {
			cut := strings.LastIndexByte(id, '/')
			if cut <= 0 {
				break
			}
			id = id[:cut]
			if j, ok := at[id]; ok && j != i {
				root[i] = j
			}
		}
	}
	steps := map[int][]shown{}
	for i := len(recs) - 1; i >= 0; i-- { // oldest first
		if root[i] >= 0 {
			steps[root[i]] = append(steps[root[i]], recs[i])
		}
	}
	out := recs[:0:0]
	for i, r := range recs {
		if root[i] < 0 {
			r.Steps = steps[i]
			out = append(out, r)
		}
	}
	return out
}

// verified is a chain's state, remembered while its file stays the same.
type verified struct {
	Name    string
	size    int64
	mod     time.Time
	Report  audit.Report
	Problem string // the log could not be read
}

func (c *Console) auditPage(w http.ResponseWriter, r *http.Request, u User) {
	f := readFilter(r)
	data := map[string]any{"Filter": f, "Records": []shown{}}
	var logs []string
	if c.o.AuditLogs != nil {
		logs = c.o.AuditLogs()
	}
	if len(logs) == 0 {
		data["NoLog"] = true
		c.page(w, r, http.StatusOK, "audit", &u, data)
		return
	}
	q, bad := f.query()
	if bad != "" {
		data["Problem"] = bad
		c.page(w, r, http.StatusBadRequest, "audit", &u, data)
		return
	}
	var chains []verified
	var recs []shown
	for _, path := range logs {
		chains = append(chains, c.verify(path))
		got, err := selectLog(path, q)
		if err != nil {
			continue // its chain says why
		}
		for _, rec := range got {
			if f.ErrorType != "" && rec.ErrorType != f.ErrorType {
				continue
			}
			line, _ := rec.MarshalJSON()
			if f.Q != "" && !containsFold(line, f.Q) {
				continue
			}
			var buf bytes.Buffer
			json.Indent(&buf, line, "", "  ")
			recs = append(recs, shown{Record: rec, Log: filepath.Base(path), JSON: buf.String()})
		}
	}
	slices.SortStableFunc(recs, func(a, b shown) int { return b.Time.Compare(a.Time) }) // newest first
	recs = groupSteps(recs)
	data["Total"] = len(recs)
	if len(recs) > f.Limit {
		recs = recs[:f.Limit]
	}
	data["Records"], data["Chains"], data["Several"] = recs, chains, len(logs) > 1
	c.page(w, r, http.StatusOK, "audit", &u, data)
}

func selectLog(path string, q audit.Query) ([]audit.Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return audit.Select(f, q)
}

// verify checks a log's chain, again only when the file changed.
func (c *Console) verify(path string) verified {
	v := verified{Name: filepath.Base(path)}
	fi, err := os.Stat(path)
	if err != nil {
		v.Problem = err.Error()
		return v
	}
	c.mu.Lock()
	old, ok := c.verdict[path]
	c.mu.Unlock()
	if ok && old.size == fi.Size() && old.mod.Equal(fi.ModTime()) {
		return old
	}
	f, err := os.Open(path)
	if err != nil {
		v.Problem = err.Error()
		return v
	}
	defer f.Close()
	v.size, v.mod = fi.Size(), fi.ModTime()
	if v.Report, err = audit.Verify(f); err != nil {
		v.Problem = err.Error()
		return v
	}
	c.mu.Lock()
	c.verdict[path] = v
	c.mu.Unlock()
	return v
}

// Broken is the first problem that is not a warning (nil: none).
func (v verified) Broken() *audit.Problem {
	for i, p := range v.Report.Problems {
		if !p.Warning {
			return &v.Report.Problems[i]
		}
	}
	return nil
}

// Warnings are the problems that are not tampering (torn lines).
func (v verified) Warnings() []audit.Problem {
	var out []audit.Problem
	for _, p := range v.Report.Problems {
		if p.Warning {
			out = append(out, p)
		}
	}
	return out
}

func containsFold(b []byte, s string) bool {
	return bytes.Contains(bytes.ToLower(b), bytes.ToLower([]byte(s)))
}

// auditSince returns the records of the logs since a time, oldest first,
// read from their ends (at most maxCounted per log), for the counts of the
// policy and activity pages; best effort: an unreadable log counts nothing.
func (c *Console) auditSince(since time.Time) []audit.Record {
	if c.o.AuditLogs == nil {
		return nil
	}
	var out []audit.Record
	for _, path := range c.o.AuditLogs() {
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		recs, err := audit.TailWhile(f, maxCounted, func(t time.Time) bool { return !t.Before(since) })
		f.Close()
		if err == nil {
			out = append(out, recs...)
		}
	}
	slices.SortStableFunc(out, func(a, b audit.Record) int { return a.Time.Compare(b.Time) })
	return out
}

// maxCounted bounds the records a count reads back from one log.
const maxCounted = 200_000
