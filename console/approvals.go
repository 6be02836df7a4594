package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/policy"
)

// answered is a call answered through this console, shown for a while.
type answered struct {
	Call     policy.PendingCall
	Decision string // once, session, always, deny
	Reason   string
	By       string
	At       time.Time
}

// maxRecent is how many answers the approvals page keeps showing.
const maxRecent = 20

// item is a waiting call as the page shows it.
type item struct {
	policy.PendingCall
	Args []arg
}

// arg is one argument: short values inline, long ones folded.
type arg struct {
	Name    string
	Value   string // the whole value (a string as it is, anything else as indented JSON)
	Summary string // for a folded value: its start and size
}

// queue reads the waiting calls and the recent answers.
func (c *Console) queue(r *http.Request) map[string]any {
	data := map[string]any{}
	if c.o.Approvals == nil {
		data["NoQueue"] = true
		return data
	}
	list, err := c.o.Approvals.Pending(r.Context())
	if err != nil {
		data["Problem"] = "The shared approval queue cannot be read (" + err.Error() + "): the calls of this replica are listed; retry in a moment."
	}
	items := make([]item, len(list))
	for i, p := range list {
		items[i] = item{PendingCall: p, Args: args(p.Arguments)}
	}
	data["Pending"] = items
	c.mu.Lock()
	data["Recent"] = slices.Clone(c.recent)
	c.mu.Unlock()
	return data
}

func (c *Console) approvalsPage(w http.ResponseWriter, r *http.Request, u User) {
	c.page(w, r, http.StatusOK, "approvals", &u, c.queue(r))
}

// queuePart is the queue alone, for console.js to swap in.
func (c *Console) queuePart(w http.ResponseWriter, r *http.Request, u User) {
	data := c.queue(r)
	data["User"], data["CSRF"], data["CanAnswer"] = &u, c.csrf(w, r), c.mayAnswer(u)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := c.pages["approvals"].ExecuteTemplate(w, "queue", data); err != nil {
		c.log.Warn("console: rendering the queue failed", "err", err)
	}
}

// decide answers a waiting call on behalf of u.
func (c *Console) decide(w http.ResponseWriter, r *http.Request, u User) {
	if !c.mayAnswer(u) {
		c.problem(w, r, http.StatusForbidden, &u, u.Name+" may read the console but not answer approvals.",
			"Ask an administrator for one of the roles of the policy's console.approvers (by default approver or admin).")
		return
	}
	if c.o.Approvals == nil {
		c.problem(w, r, http.StatusNotFound, &u, "No approval queue is configured.", "")
		return
	}
	err := c.answer(r, r.PostFormValue("id"), r.PostFormValue("decision"), r.PostFormValue("reason"), r.PostFormValue("confirm"), "console:"+u.Name, u.Name)
	if err != nil {
		status, suggestion := http.StatusInternalServerError, "Go back to the queue and try again."
		var de *policy.DecideError
		if errors.As(err, &de) {
			status = de.Status
			if status == http.StatusNotFound || status == http.StatusConflict {
				suggestion = "Someone else answered it, it timed out, or its call ended: go back to the queue."
			}
		}
		c.problem(w, r, status, &u, "The answer was not taken: "+err.Error()+".", suggestion)
		return
	}
	http.Redirect(w, r, "/ui/#answered", http.StatusSeeOther)
}

// answer answers the waiting call id through the queue on behalf of by
// (the approver the audit log names), and shows it among the answers of
// this console as answered by name.
func (c *Console) answer(r *http.Request, id, decision, reason, confirm, by, name string) error {
	reason = strings.TrimSpace(reason)
	var call policy.PendingCall
	if list, err := c.o.Approvals.Pending(r.Context()); err == nil {
		for _, p := range list {
			if p.ID == id {
				call = p
			}
		}
	}
	if err := c.o.Approvals.Decide(r.Context(), id, decision, reason, confirm, by); err != nil {
		return err
	}
	if call.ID == "" {
		call.ID = id
	}
	c.mu.Lock()
	c.recent = append([]answered{{Call: call, Decision: decision, Reason: reason, By: name, At: time.Now()}}, c.recent...)
	if len(c.recent) > maxRecent {
		c.recent = c.recent[:maxRecent]
	}
	c.mu.Unlock()
	c.notify()
	return nil
}

// events streams "queue" events while the queue changes (server-sent
// events): console.js then fetches /ui/queue.
func (c *Console) events(w http.ResponseWriter, r *http.Request, u User) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported here", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	mine, stop := c.subscribe()
	defer stop()
	var queue <-chan struct{}
	if c.o.Changes != nil {
		ch, stop := c.o.Changes()
		defer stop()
		queue = ch
	}
	// The first event comes at once: the queue may have changed between
	// the page and this stream.
	last, burst := c.signature(r), 0
	fmt.Fprintf(w, "retry: 2000\n\nevent: queue\ndata: %d\n\n", strings.Count(last, "\n"))
	flusher.Flush()
	timer := time.NewTimer(pollEvery)
	defer timer.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-c.closing:
			return
		case <-mine:
			burst = burstLooks
		case <-queue:
			burst = burstLooks
		case <-timer.C:
		}
		if sig := c.signature(r); sig != last {
			last = sig
			fmt.Fprintf(w, "event: queue\ndata: %d\n\n", strings.Count(sig, "\n"))
		} else if burst == 0 {
			fmt.Fprint(w, ": idle\n\n") // finds a closed connection
		}
		flusher.Flush()
		next := pollEvery
		if burst > 0 { // a change was announced: it shows within moments
			burst--
			next = burstEvery
		}
		timer.Reset(next)
	}
}

// How often an open page's stream looks at the queue: every pollEvery (the
// calls of other replicas), and burstLooks times every burstEvery after a
// change in this process.
const (
	pollEvery  = 2 * time.Second
	burstEvery = 50 * time.Millisecond
	burstLooks = 20
)

// signature says what the queue page shows: the ids waiting and answered.
func (c *Console) signature(r *http.Request) string {
	var b strings.Builder
	if c.o.Approvals != nil {
		list, _ := c.o.Approvals.Pending(r.Context())
		for _, p := range list {
			b.WriteString(p.ID + "\n")
		}
	}
	c.mu.Lock()
	if len(c.recent) > 0 {
		fmt.Fprintf(&b, "answered %s %d", c.recent[0].Call.ID, len(c.recent))
	}
	c.mu.Unlock()
	return b.String()
}

func (c *Console) subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	c.mu.Lock()
	c.subs[ch] = struct{}{}
	c.mu.Unlock()
	return ch, func() {
		c.mu.Lock()
		delete(c.subs, ch)
		c.mu.Unlock()
	}
}

func (c *Console) notify() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for ch := range c.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Folding: a value longer than foldBytes or of several lines is shown
// folded, its first summaryRunes characters in the summary.
const (
	foldBytes    = 160
	summaryRunes = 80
)

// args lists a call's arguments (redacted JSON) for a person: each member
// of an object, long values folded; anything else as one value.
func args(raw json.RawMessage) []arg {
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return []arg{value("", raw)}
	}
	names := make([]string, 0, len(obj))
	for k := range obj {
		names = append(names, k)
	}
	slices.Sort(names)
	out := make([]arg, 0, len(names))
	for _, k := range names {
		out = append(out, value(k, obj[k]))
	}
	return out
}

func value(name string, raw json.RawMessage) arg {
	a := arg{Name: name}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		a.Value = s
	} else {
		var buf bytes.Buffer
		if json.Indent(&buf, raw, "", "  ") == nil {
			a.Value = buf.String()
		} else {
			a.Value = string(raw)
		}
	}
	if len(a.Value) > foldBytes || strings.Contains(a.Value, "\n") {
		first, _, _ := strings.Cut(a.Value, "\n")
		if utf8.RuneCountInString(first) > summaryRunes {
			first = string([]rune(first)[:summaryRunes])
		}
		a.Summary = fmt.Sprintf("%s … (%d bytes, %d lines)", first, len(a.Value), strings.Count(a.Value, "\n")+1)
	}
	return a
}
