package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"

	"github.com/toolgate/toolgate/tool"
)

// Request is what an Approver is asked to decide.
type Request struct {
	Call       tool.Call
	Definition tool.Definition
	Decision   Decision // Effect is Ask; Confirm asks for an explicit second confirmation
	// AlwaysRules are the allow rules an "always" answer adds to the policy
	// file (filled by Gate; empty when "always" cannot be offered).
	AlwaysRules []string
}

// Scope is how long an approval holds.
type Scope string

const (
	Once    Scope = "once"    // this call only
	Session Scope = "session" // the same call (tool and canonical arguments) again in this session
	Always  Scope = "always"  // an allow rule written to the policy file
)

// Approval is an Approver's answer.
type Approval struct {
	Approved bool
	Approver string // who decided, for the audit log ("terminal", "cli --yes", "elicitation", "http", "session", …)
	Scope    Scope
	Reason   string // a denial's reason goes back to the model
}

// Approver decides calls the policy asks about. It must honour ctx: a
// cancelled or expired context is a denial.
type Approver interface {
	Approve(ctx context.Context, req Request) (Approval, error)
}

// ApproverFunc adapts a function to Approver (the callback for library users).
type ApproverFunc func(ctx context.Context, req Request) (Approval, error)

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, req Request) (Approval, error) { return f(ctx, req) }

// ApproveAll approves every request once, naming who stands behind it (e.g.
// "cli --yes"). It is for callers that have already asked their human.
func ApproveAll(who string) Approver {
	return ApproverFunc(func(context.Context, Request) (Approval, error) {
		return Approval{Approved: true, Approver: who, Scope: Once}, nil
	})
}

// Gate wraps an Approver with what every approval needs, whoever answers:
//
//   - session memory: an approval with scope "session" holds for the same
//     call (same session, same tool, same arguments once canonicalised)
//     until the session ends. Keying by the exact call rather than by the
//     rule that asked means "session" never approves a different command
//     that the same broad rule or level happened to ask about;
//   - "always": the allow rules of Request.AlwaysRules are appended to the
//     policy file (Policy.Source) atomically, and hold in this process at
//     once; without a file, "always" is kept for the session instead;
//   - level-3 calls (Decision.Confirm) are approved once at a time: no
//     memory answers them and their approvals are narrowed to "once";
//   - a timeout (Approvals.Timeout, default 5 minutes): no answer is a
//     denial;
//   - an approver that cannot ask anyone (a shared queue down) returns a
//     tool.Error of type unavailable, and one that asks through the
//     client's next call (InputRequests) one of type input_required: both
//     are passed on as they are, not denials;
//   - the denial streak: after Approvals.DenialStreak (default 3) denials in
//     a row in a session, the reason sent back to the model tells it to stop
//     and ask its user. Only answers to questions count: a deny rule is
//     already final and says so.
//
// A Gate is safe for concurrent use.
type Gate struct {
	next Approver
	p    *Policy

	mu       sync.Mutex
	sessions map[string]*sessionState
	always   []*rule
}

type sessionState struct {
	approved map[string]bool
	denials  int
}

// NewGate returns a Gate in front of next, configured by p's approvals
// section (p may be nil: defaults, no file).
func NewGate(next Approver, p *Policy) *Gate {
	return &Gate{next: next, p: p, sessions: map[string]*sessionState{}}
}

// EndSession forgets what the session approved and its denial streak.
func (g *Gate) EndSession(session string) {
	g.mu.Lock()
	delete(g.sessions, session)
	g.mu.Unlock()
}

func (g *Gate) settings() Approvals {
	var a Approvals
	if g.p != nil {
		a = g.p.Approvals
	}
	if a.Timeout == 0 {
		a.Timeout = DefaultApprovalTimeout
	}
	if a.DefaultScope == "" {
		a.DefaultScope = Once
	}
	if a.DenialStreak == 0 {
		a.DenialStreak = 3
	}
	return a
}

// Approve answers from memory when it can, else asks the wrapped Approver.
func (g *Gate) Approve(ctx context.Context, req Request) (Approval, error) {
	set := g.settings()
	key := approvalKey(req.Call)
	if !req.Decision.Confirm {
		if a, ok := g.remembered(req, key); ok {
			return a, nil
		}
	}
	if g.p != nil && g.p.Source != "" && len(req.AlwaysRules) == 0 && !req.Decision.Confirm {
		req.AlwaysRules = SuggestRules(g.p, req.Definition, req.Call)
	}
	actx, cancel := context.WithTimeout(ctx, set.Timeout)
	a, err := g.next.Approve(actx, req)
	timedOut := errors.Is(actx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	cancel()
	var te *tool.Error
	if errors.As(err, &te) && (te.Type == tool.Unavailable || te.Type == tool.InputRequired) && ctx.Err() == nil {
		return Approval{Approver: a.Approver}, te // no one could be asked, or not yet: not a denial
	}
	switch {
	case timedOut && !a.Approved:
		a = Approval{Approver: a.Approver, Reason: fmt.Sprintf("no one answered within %s", set.Timeout)}
	case err != nil:
		a = Approval{Approver: a.Approver, Reason: "the approval failed: " + err.Error()}
	case ctx.Err() != nil:
		a = Approval{Approver: a.Approver, Reason: "the call was cancelled while waiting for approval"}
	}
	if a.Approved && a.Scope == "" {
		a.Scope = set.DefaultScope
	}
	if !a.Approved {
		a.Scope = ""
	}
	if a.Approved && req.Decision.Confirm {
		a.Scope = Once
	}
	if a.Approved && a.Scope == Always {
		if err := g.writeAlways(req.AlwaysRules); err != nil {
			a.Scope = Session
			a.Reason = strings.TrimSpace(a.Reason + " (kept for this session only: " + err.Error() + ")")
		}
	}

	g.mu.Lock()
	defer g.mu.Unlock()
	st := g.session(req.Call.Session)
	if a.Approved {
		st.denials = 0
		if a.Scope == Session {
			st.approved[key] = true
		}
		return a, nil
	}
	st.denials++
	if st.denials >= set.DenialStreak {
		msg := fmt.Sprintf("This is denial number %d in a row: stop calling tools, tell your user what you were trying to do and ask how to proceed.", st.denials)
		if a.Reason == "" {
			a.Reason = msg
		} else {
			a.Reason = strings.TrimRight(a.Reason, ". ") + ". " + msg
		}
	}
	return a, nil
}

func (g *Gate) session(id string) *sessionState {
	st := g.sessions[id]
	if st == nil {
		st = &sessionState{approved: map[string]bool{}}
		g.sessions[id] = st
	}
	return st
}

func (g *Gate) remembered(req Request, key string) (Approval, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if st := g.sessions[req.Call.Session]; st != nil && st.approved[key] {
		st.denials = 0
		return Approval{Approved: true, Approver: "session", Scope: Session, Reason: "approved earlier in this session"}, true
	}
	if len(g.always) > 0 && g.p != nil {
		f := &facts{roots: g.p.prepare().roots, def: req.Definition, call: req.Call, info: g.p.info(req.Definition)}
		if rs := allowedBy(f, g.always); len(rs) > 0 {
			return Approval{Approved: true, Approver: "always", Scope: Always, Reason: "allowed by rule " + rs[0].text + ", added in this process"}, true
		}
	}
	return Approval{}, false
}

// writeAlways appends the rules to the policy file and keeps them in force.
func (g *Gate) writeAlways(rules []string) error {
	if g.p == nil || g.p.Source == "" {
		return errors.New("the policy has no file to write an allow rule to")
	}
	if len(rules) == 0 {
		return errors.New("this call cannot be described by a narrow allow rule")
	}
	var compiled []*rule
	for _, r := range rules {
		c, err := compileRule(r)
		if err != nil {
			return err
		}
		compiled = append(compiled, c)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range rules {
		if err := AppendAllow(g.p.Source, r); err != nil {
			return err
		}
	}
	g.always = append(g.always, compiled...)
	return nil
}

// approvalKey identifies a call for session memory: session, tool and the
// arguments in canonical JSON (keys sorted, numbers as written).
func approvalKey(c tool.Call) string {
	return c.Session + "\x00" + c.Name + "\x00" + canonicalJSON(c.Args)
}

func canonicalJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "{}"
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return string(raw)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return string(raw)
	}
	return string(out)
}

// SuggestRules returns the narrowest allow rules that would allow this very
// call, for an "always" answer: one exact command rule per command of a
// command line, the exact paths of a file tool (anchored to the root), the
// host of a URL, else the bare tool name. It returns nil when no rule can
// be written safely (a command with parts known only at run time, a path
// outside the roots, names with glob characters).
func SuggestRules(p *Policy, def tool.Definition, call tool.Call) []string {
	info := p.info(def)
	f := &facts{roots: p.prepare().roots, def: def, call: call, info: info}
	if strings.ContainsAny(def.Name, "*?[]()") {
		return nil
	}
	if info.isCommand() {
		sh := f.command()
		if sh == nil || sh.err != nil || len(sh.opaque) > 0 {
			return nil
		}
		var out []string
		seen := map[string]bool{}
		for _, part := range sh.parts {
			if len(part.words) == 0 {
				continue
			}
			var ws []string
			for _, w := range part.words {
				if w.dyn || strings.ContainsAny(w.s, "*?\n") {
					return nil
				}
				q, err := syntax.Quote(w.s, syntax.LangBash)
				if err != nil {
					return nil
				}
				ws = append(ws, q)
			}
			r := "Bash(" + strings.Join(ws, " ") + ")"
			if c, err := compileRule(r); err != nil || !c.cmd.allows(part) {
				return nil
			}
			if !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
		return out
	}
	var specs []string
	uses, locs := f.pathUses()
	for i, u := range uses {
		if u.weak {
			continue
		}
		if !locs[i].inside || strings.ContainsAny(locs[i].rel, "*?[]{},!\\\n") {
			return nil
		}
		specs = append(specs, "/"+locs[i].rel)
	}
	hosts, bad := f.urlHosts()
	if bad {
		return nil
	}
	for _, h := range hosts {
		specs = append(specs, "domain:"+h)
	}
	switch {
	case len(specs) == 0:
		return []string{def.Name}
	case len(hosts) > 0 && len(hosts) < len(specs):
		return nil // paths and URLs together: no single rule kind fits
	case len(hosts) > 0:
		var out []string
		for _, s := range specs {
			out = append(out, def.Name+"("+s+")")
		}
		return out
	}
	return []string{def.Name + "(" + strings.Join(specs, ", ") + ")"}
}

// truncate shortens s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d more bytes)", len(s)-cut)
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// prettyArgs renders arguments for a human: indented JSON, truncated.
func prettyArgs(raw json.RawMessage, max int) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return truncate(string(raw), max)
	}
	return truncate(buf.String(), max)
}
