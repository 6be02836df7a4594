package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/mcpclient"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/tool"
	"github.com/toolgate/toolgate/trust"
)

func newTrustCmd(s *streams) *cobra.Command {
	var policyFile, pinsFile string
	cmd := &cobra.Command{
		Use:   "trust",
		Short: "Review the pinned tools of the gateway's upstreams: list them, diff a quarantined one, approve it",
		Long: `toolgate proxy pins every upstream tool's definition when it first sees it
(the policy's trust.pins, default .toolgate/pins.json beside the policy file),
and quarantines a tool that is new, changed, or flagged by the poisoning scan,
and every tool of an upstream whose command, executable or URL changed. A
quarantined tool is hidden (trust.on_change: block), asks before each call
(ask) or is only audited (warn) until a person approves it here. A running
gateway watches the pin file and picks an approval up within a second.

Name the pin file with --policy FILE (its trust.pins) or --pins FILE.`,
		Example: `  toolgate trust list --policy toolgate.yaml
  toolgate trust diff fs/read_file --policy toolgate.yaml
  toolgate trust approve fs/read_file --policy toolgate.yaml
  toolgate trust approve 'fs/*' --pins .toolgate/pins.json`,
	}
	f := cmd.PersistentFlags()
	f.StringVar(&policyFile, "policy", "", "policy file whose trust.pins names the pin file")
	f.StringVar(&pinsFile, "pins", "", "the pin file itself")
	open := func() (*trust.Pins, error) {
		switch {
		case policyFile != "" && pinsFile != "":
			return nil, usageErr("give --policy or --pins, not both")
		case pinsFile != "":
			return trust.OpenPins(pinsFile), nil
		case policyFile != "":
			pol, err := loadPolicy(policyFile)
			if err != nil {
				return nil, err
			}
			return trust.OpenPins(pol.Trust.Pins), nil
		}
		return nil, usageErr("name the pin file: --policy FILE (its trust.pins) or --pins FILE")
	}
	load := func() (*trust.PinFile, error) {
		p, err := open()
		if err != nil {
			return nil, err
		}
		pf, err := p.Load()
		if err != nil {
			return nil, &exitError{exitTool, err}
		}
		return pf, nil
	}

	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List every pinned upstream tool: pinned, quarantined or removed, and why",
		Long: `List prints one row per upstream tool: its state (pinned, quarantined,
removed), the scan's verdict, and why it is quarantined. --json prints one
JSON object per line: {"upstream","tool","state","why","verdict","findings",
"hash","pending"}.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			pf, err := load()
			if err != nil {
				return err
			}
			entries := pf.Entries()
			if asJSON {
				enc := json.NewEncoder(s.out)
				for _, e := range entries {
					if err := enc.Encode(e); err != nil {
						return err
					}
				}
				return nil
			}
			if len(entries) == 0 {
				fmt.Fprintln(s.out, "no upstream tool is pinned yet (toolgate proxy pins them when it first sees them)")
				return nil
			}
			w := tabwriter.NewWriter(s.out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "TOOL\tSTATE\tSCAN\tWHY")
			for _, e := range entries {
				fmt.Fprintf(w, "%s/%s\t%s\t%s\t%s\n", e.Upstream, e.Tool, e.State, orDash(string(e.Verdict)), orDash(e.Why))
			}
			return w.Flush()
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "one JSON object per tool and line")

	var diffAsJSON bool
	diff := &cobra.Command{
		Use:   "diff UPSTREAM/TOOL | UPSTREAM",
		Short: "Show how a quarantined tool (or a changed upstream) differs from what was pinned, with the scan's findings",
		Long: `Diff prints the pinned definition against the one waiting for approval, both
pretty-printed with sorted keys, line by line ("-" pinned, "+" listed), and
the scan's findings. UPSTREAM alone compares its pinned identity (command
line, executable and its SHA-256, or URL) with the one seen since. --json
prints {"upstream","tool","state","why","pinned","listed","verdict",
"findings","diff"}.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			pf, err := load()
			if err != nil {
				return err
			}
			out, err := trustDiff(pf, args[0])
			if err != nil {
				return err
			}
			if diffAsJSON {
				return json.NewEncoder(s.out).Encode(diffView(pf, args[0], out))
			}
			_, err = fmt.Fprint(s.out, out)
			return err
		},
	}
	diff.Flags().BoolVar(&diffAsJSON, "json", false, "one JSON object")

	var by, auditPath string
	approve := &cobra.Command{
		Use:   "approve UPSTREAM/TOOL | UPSTREAM/*",
		Short: "Pin what waits for approval: one tool, or a changed upstream with all its waiting tools",
		Long: `Approve pins the definition a quarantined tool now has (see toolgate trust
diff first); UPSTREAM/* also accepts the upstream's changed command,
executable or URL and every tool of it that waits. The approval names who
gave it (--by, default the user name) and is written to the audit log.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			p, err := open()
			if err != nil {
				return err
			}
			if by == "" {
				by = currentUser()
			}
			events, err := p.Approve(args[0], by, time.Now())
			if err != nil {
				return &exitError{exitTool, err}
			}
			if auditPath != "off" && auditPath != "" {
				log, err := audit.Open(auditLogPath(auditPath), audit.Options{})
				if err != nil {
					return &exitError{exitTool, fmt.Errorf("approved, but the audit log could not be opened: %w", err)}
				}
				defer log.Close()
				for _, e := range events {
					if err := log.Append(context.Background(), trustRecord(e)); err != nil {
						return &exitError{exitTool, fmt.Errorf("approved, but the audit log could not be written: %w", err)}
					}
				}
			}
			for _, e := range events {
				name := e.Upstream
				if e.Tool != "" {
					name += "/" + e.Tool
				}
				fmt.Fprintf(s.out, "approved %s\n", name)
			}
			return nil
		},
	}
	approve.Flags().StringVar(&by, "by", "", "who approves (default: the user name)")
	approve.Flags().StringVar(&auditPath, "audit", defaultAuditPath(), "audit log file; \"off\" disables it")

	var suggestAudit string
	suggest := &cobra.Command{
		Use:   "suggest UPSTREAM",
		Short: "Print the isolation grants that would have allowed what the upstream's box refused (YAML to paste; never applied)",
		Long: `Suggest reads the audit log for the refusals of UPSTREAM's box (records of the
pseudo-tool isolation:UPSTREAM) and prints, as YAML to paste into its
isolation block, the grants that would have allowed them: a domain for
network:, an exact host:port for private:. What no grant can allow (a
loopback, link-local or metadata address, an IP address) is listed as a
comment. Nothing is changed: read it, and paste what you mean to give.`,
		Example: `  toolgate trust suggest fs --audit ~/.local/state/toolgate/audit.jsonl`,
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			f, err := os.Open(auditLogPath(suggestAudit))
			if err != nil {
				return &exitError{exitTool, fmt.Errorf("reading the audit log: %w", err)}
			}
			defer f.Close()
			recs, err := audit.Select(f, audit.Query{Tool: "isolation:" + args[0], Decision: audit.DecisionDeny})
			if err != nil {
				return &exitError{exitTool, err}
			}
			fmt.Fprint(s.out, suggestGrants(args[0], recs))
			return nil
		},
	}
	suggest.Flags().StringVar(&suggestAudit, "audit", defaultAuditPath(), "the gateway's audit log")

	cmd.AddCommand(list, diff, approve, suggest)
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func currentUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "unknown"
}

// trustDiff shows what waits for approval in target (UPSTREAM/TOOL, or
// UPSTREAM for its identity) against what is pinned, with the scan's
// findings.
func trustDiff(pf *trust.PinFile, target string) (string, error) {
	upName, toolName, _ := strings.Cut(target, "/")
	up := pf.Upstreams[upName]
	if up == nil {
		return "", &exitError{exitTool, fmt.Errorf("no upstream named %q is pinned (toolgate trust list shows them)", upName)}
	}
	var b strings.Builder
	if toolName == "" || toolName == "*" {
		if up.PendingIdentity == nil {
			fmt.Fprintf(&b, "upstream %s is as pinned (approved by %s at %s)\n", upName, up.ApprovedBy, up.ApprovedAt.UTC().Format(time.RFC3339))
			return b.String(), nil
		}
		old, _ := json.Marshal(up.Identity)
		cur, _ := json.Marshal(up.PendingIdentity)
		fmt.Fprintf(&b, "upstream %s changed: %s\n", upName, up.Identity.Change(*up.PendingIdentity))
		b.WriteString(trust.Diff("pinned", trust.Pretty(old), "seen "+up.PendingSince.UTC().Format(time.RFC3339), trust.Pretty(cur)))
		return b.String(), nil
	}
	t := up.Tools[toolName]
	if t == nil {
		return "", &exitError{exitTool, fmt.Errorf("upstream %s has no tool named %q (toolgate trust list shows them)", upName, toolName)}
	}
	if up.PendingIdentity != nil {
		fmt.Fprintf(&b, "upstream %s itself changed (%s); toolgate trust diff %s shows how\n", upName, up.Identity.Change(*up.PendingIdentity), upName)
	}
	if t.Pending == nil {
		fmt.Fprintf(&b, "%s/%s: nothing waits for approval; the pinned definition (approved by %s):\n", upName, toolName, orDash(t.ApprovedBy))
		b.WriteString(trust.Pretty(t.Definition) + "\n")
		writeFindings(&b, t.Verdict, t.Findings)
		return b.String(), nil
	}
	c := t.Pending
	fmt.Fprintf(&b, "%s/%s is quarantined: %s\n", upName, toolName, c.Why)
	oldName := "pinned (nothing: a new tool)"
	if t.Hash != "" {
		oldName = fmt.Sprintf("pinned (approved by %s at %s)", orDash(t.ApprovedBy), t.ApprovedAt.UTC().Format(time.RFC3339))
	}
	old := ""
	if len(t.Definition) > 0 {
		old = trust.Pretty(t.Definition) + "\n"
	}
	b.WriteString(trust.Diff(oldName, old, "listed "+c.SeenAt.UTC().Format(time.RFC3339), trust.Pretty(c.Definition)+"\n"))
	writeFindings(&b, c.Verdict, c.Findings)
	fmt.Fprintf(&b, "approve it with: toolgate trust approve %s/%s\n", upName, toolName)
	return b.String(), nil
}

// diffJSON is trust diff --json.
type diffJSON struct {
	Upstream string          `json:"upstream"`
	Tool     string          `json:"tool,omitempty"`
	State    trust.State     `json:"state"`
	Why      string          `json:"why,omitempty"`
	Pinned   json.RawMessage `json:"pinned,omitempty"` // the pinned definition, or identity
	Listed   json.RawMessage `json:"listed,omitempty"` // what waits for approval
	Verdict  trust.Verdict   `json:"verdict,omitempty"`
	Findings []trust.Finding `json:"findings,omitempty"`
	Diff     string          `json:"diff"` // what trust diff prints
}

// diffView is trust diff's answer as data (target exists: trustDiff checked it).
func diffView(pf *trust.PinFile, target, text string) diffJSON {
	upName, toolName, _ := strings.Cut(target, "/")
	up := pf.Upstreams[upName]
	v := diffJSON{Upstream: upName, State: trust.Pinned, Diff: text}
	if toolName == "" || toolName == "*" {
		v.Pinned, _ = json.Marshal(up.Identity)
		if up.PendingIdentity != nil {
			v.State, v.Why = trust.Quarantined, up.Identity.Change(*up.PendingIdentity)
			v.Listed, _ = json.Marshal(up.PendingIdentity)
		}
		return v
	}
	for _, e := range pf.Entries() {
		if e.Upstream == upName && e.Tool == toolName {
			v.Tool, v.State, v.Why, v.Verdict, v.Findings = toolName, e.State, e.Why, e.Verdict, e.Findings
		}
	}
	t := up.Tools[toolName]
	v.Pinned = t.Definition
	if t.Pending != nil {
		v.Listed = t.Pending.Definition
	}
	return v
}

func writeFindings(b *strings.Builder, v trust.Verdict, fs []trust.Finding) {
	if v == "" {
		return
	}
	fmt.Fprintf(b, "scan: %s\n", v)
	for _, f := range fs {
		fmt.Fprintf(b, "  %s at %s: %q — %s\n", f.Kind, f.Field, f.Evidence, f.Why)
	}
}

// trustRecord is the audit record of a trust event: the pseudo-tool
// trust:UPSTREAM/TOOL, the event as the outcome (pinned, quarantined,
// removed, approved, …), the action as the decision, the reason as the
// rule, and the pins and findings as the arguments.
func trustRecord(e trust.Event) audit.Record {
	name := e.Upstream
	if e.Tool != "" {
		name += "/" + e.Tool
	}
	decision := audit.DecisionAllow
	switch e.Action {
	case trust.Block:
		decision = audit.DecisionDeny
	case trust.Ask:
		decision = audit.DecisionAsk
	}
	if e.Kind == "removed" {
		decision = ""
	}
	fs := e.Findings
	if len(fs) > 8 {
		fs = fs[:8]
	}
	args, _ := json.Marshal(struct {
		Hash     string          `json:"hash,omitempty"`
		Previous string          `json:"previous,omitempty"`
		Verdict  trust.Verdict   `json:"verdict,omitempty"`
		Findings []trust.Finding `json:"findings,omitempty"`
	}{e.Hash, e.Previous, e.Verdict, fs})
	return audit.Record{Tool: "trust:" + name, Arguments: args, Decision: decision, Rule: e.Why, Mode: "trust", Outcome: e.Kind}
}

// pinVetter is the gateway's Vetter: it reviews the upstreams' tools
// against the pin file (trust.Pins.Review), writes what changed to the
// audit log, and turns where each tool stands into what the gateway does.
type pinVetter struct {
	pins    *trust.Pins
	set     trust.Settings
	auditor engine.Auditor // nil: no audit log
	log     *slog.Logger

	boxes  map[string]boxIdentity // what the box of each stdio upstream adds to its identity
	hashes *trust.Hashes          // the executables' and scripts' hashes kept between starts (nil: none)

	mu    sync.Mutex
	held  map[[2]string]bool              // upstream, tool: quarantined at the last Vet
	ahead map[string]<-chan identityTaken // upstream: its identity taken as the gateway started, until its first listing
}

// identityTaken is what trust.Identify returned.
type identityTaken struct {
	id  trust.Identity
	err error
}

// identifyAhead takes the identity of each stdio upstream of cfgs now, in
// the background, while the upstreams start: trust.Identify hashes the
// executable and each file the arguments name (node is 120 MB: a tenth
// of a second or more of CPU), and the first listing would wait for it.
// The first Vet of each upstream takes what was found; each later one
// takes the identity again.
func (v *pinVetter) identifyAhead(cfgs []mcpclient.Config) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.ahead = map[string]<-chan identityTaken{}
	for _, c := range cfgs {
		if c.Command == "" {
			continue
		}
		taken := make(chan identityTaken, 1)
		go func() {
			id, err := v.hashes.Identify(c.Command, c.Args, c.Dir, c.URL)
			taken <- identityTaken{id, err}
		}()
		v.ahead[c.Name] = taken
	}
}

// identify returns the upstream's identity: the one taken ahead, once,
// else taken now.
func (v *pinVetter) identify(c mcpclient.Config) (trust.Identity, error) {
	v.mu.Lock()
	taken := v.ahead[c.Name]
	delete(v.ahead, c.Name)
	v.mu.Unlock()
	if taken != nil {
		t := <-taken
		return t.id, t.err
	}
	return v.hashes.Identify(c.Command, c.Args, c.Dir, c.URL)
}

// quarantined reports whether the upstream's tool was quarantined when the
// tools were last vetted.
func (v *pinVetter) quarantined(upstream, name string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.held[[2]string{upstream, name}]
}

// newPinVetter reads the policy's trust block; the pin file must be
// readable (a damaged one stops the gateway).
func newPinVetter(pol *policy.Policy, auditor engine.Auditor, log *slog.Logger) (*pinVetter, error) {
	t := pol.Trust
	v := &pinVetter{
		pins: trust.OpenPins(t.Pins),
		set: trust.Settings{
			OnChange: trust.Action(t.Change()),
			Scan:     func(v trust.Verdict) trust.Action { return trust.Action(t.Scan.For(string(v))) },
		},
		auditor: auditor,
		log:     log,
		// Beside, not in, the launchers' caches (granted to boxes).
		hashes: &trust.Hashes{Path: filepath.Join(stateDir(), "hashes.json")},
	}
	if _, err := v.pins.Load(); err != nil {
		return nil, &exitError{exitTool, err}
	}
	return v, nil
}

func (v *pinVetter) Vet(ctx context.Context, ls []mcpclient.Listing) (map[string]map[string]mcpclient.Verdict, error) {
	out := map[string]map[string]mcpclient.Verdict{}
	var listings []trust.Listing
	for _, l := range ls {
		name := l.Upstream.Name
		out[name] = map[string]mcpclient.Verdict{}
		id, err := v.identify(l.Upstream)
		if bi, ok := v.boxes[name]; ok {
			id.Box = bi.grants
			if bi.resolved != nil {
				id.Resolved = bi.resolved()
			}
		}
		if err != nil {
			v.log.Error("the upstream's executable cannot be checked: its tools are hidden", "upstream", name, "err", err)
			for _, t := range l.Tools {
				out[name][t.Name] = mcpclient.Verdict{Treatment: mcpclient.Hide, Reason: err.Error(), Refusal: tool.Errorf(tool.PermissionDenied, "%s/%s is held back: %v", name, t.Name, err).
					WithSuggestion("do not retry; tell the user the gateway cannot check this upstream's executable")}
			}
			continue
		}
		tl := trust.Listing{Upstream: name, Identity: id}
		for _, t := range l.Tools {
			raw, err := json.Marshal(t)
			var d trust.ToolDef
			if err == nil {
				err = json.Unmarshal(raw, &d)
			}
			if err != nil {
				return nil, fmt.Errorf("tool %s/%s: %w", name, t.Name, err)
			}
			tl.Tools = append(tl.Tools, d)
		}
		listings = append(listings, tl)
	}
	standings, events, err := v.pins.Review(listings, v.set, time.Now())
	if err != nil {
		return nil, err
	}
	for _, e := range events {
		if e.Kind == "quarantined" || e.Kind == "identity_changed" {
			v.log.Warn("upstream tool quarantined", "tool", e.Upstream+"/"+e.Tool, "action", e.Action, "why", e.Why)
		}
		if v.auditor != nil {
			if err := v.auditor.Append(ctx, trustRecord(e)); err != nil {
				return nil, fmt.Errorf("writing the audit log: %w", err)
			}
		}
	}
	held := map[[2]string]bool{}
	for up, tools := range standings {
		for name, st := range tools {
			out[up][name] = verdictOf(up, name, st)
			if st.State == trust.Quarantined {
				held[[2]string{up, name}] = true
			}
		}
	}
	v.mu.Lock()
	v.held = held
	v.mu.Unlock()
	return out, nil
}

// Refused writes a call of a hidden tool to the audit log: the pseudo-tool
// trust:UPSTREAM/TOOL, decision deny, outcome refused, with the call's
// arguments.
func (v *pinVetter) Refused(ctx context.Context, upstream, remote string, args json.RawMessage, refusal *tool.Error) {
	if v.auditor == nil {
		return
	}
	rec := audit.Record{Tool: "trust:" + upstream + "/" + remote, Arguments: args, Decision: audit.DecisionDeny, Rule: refusal.Message,
		Mode: "trust", Outcome: "refused", ErrorType: string(refusal.Type)}
	if err := v.auditor.Append(ctx, rec); err != nil {
		v.log.Error("audit log write failed", "err", err)
	}
}

// verdictOf turns where a tool stands into what the gateway does with it.
func verdictOf(up, name string, st trust.Standing) mcpclient.Verdict {
	if st.State != trust.Quarantined {
		return mcpclient.Verdict{Treatment: mcpclient.Offer}
	}
	id := up + "/" + name
	switch st.Action {
	case trust.Warn:
		return mcpclient.Verdict{Treatment: mcpclient.Offer}
	case trust.Ask:
		return mcpclient.Verdict{Treatment: mcpclient.AskFirst, Reason: fmt.Sprintf("%s is quarantined (%s); approve only if you trust it", id, st.Why)}
	}
	e := tool.Errorf(tool.PermissionDenied, "%s is quarantined until a person approves it: %s", id, st.Why).
		WithSuggestion("do not retry; tell the user that %s waits for review: toolgate trust diff %s shows what changed, toolgate trust approve %s accepts it", id, id, id).
		WithDetail("upstream", up).WithDetail("tool", name)
	if st.Verdict != "" && st.Verdict != trust.Clean {
		e.WithDetail("verdict", string(st.Verdict))
	}
	return mcpclient.Verdict{Treatment: mcpclient.Hide, Reason: st.Why, Refusal: e}
}

// watchPins calls refresh whenever the pin file is replaced or changed
// (an approval), polling it every interval until ctx ends.
func watchPins(ctx context.Context, path string, interval time.Duration, refresh func()) {
	stat := func() os.FileInfo {
		fi, _ := os.Stat(path)
		return fi
	}
	last := stat()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cur := stat()
		same := last == nil && cur == nil ||
			last != nil && cur != nil && os.SameFile(last, cur) && last.ModTime().Equal(cur.ModTime()) && last.Size() == cur.Size()
		if !same {
			last = cur
			refresh()
		}
	}
}
