package cli

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/mcpclient"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/selection"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/tool"
)

// learnHook is the engine's Auditor when tool_search learns from use: it
// hands every record (arguments already redacted of secrets) to the
// Deferred set once it exists, after the audit log (next, nil for none)
// has it. The engine itself knows nothing of selection.
type learnHook struct {
	next engine.Auditor
	d    atomic.Pointer[selection.Deferred]
}

// Append implements engine.Auditor.
func (h *learnHook) Append(ctx context.Context, rec audit.Record) error {
	var err error
	if h.next != nil {
		err = h.next.Append(ctx, rec)
	}
	if d := h.d.Load(); d != nil && err == nil {
		d.Observe(ctx, observed(rec))
	}
	return err
}

// observed is an audit record as tool_search's learning reads it: only a
// call that was allowed and ran to an unflagged success ("ok") teaches.
func observed(rec audit.Record) selection.Observed {
	return selection.Observed{Time: rec.Time, Principal: rec.Principal, Session: rec.Session, Tool: rec.Tool,
		Arguments: rec.Arguments, OK: rec.Outcome == audit.OutcomeOK}
}

// learning is tool_search's learning as the policy sets it (nil when
// selection.learn is false): records in Redis with state.redis (every
// replica learns from all), else in the state folder's usage.db (in memory
// when another process holds it); toolgate.selection.hit counts, per
// upstream (the part of a tool's name before upstreamOf's cut, "" for the
// built-in tools), where the tool a caller called after a search stood in
// its results. It returns what must be closed.
func learning(pol *policy.Policy, rc *redis.Client, mp metric.MeterProvider, auditor engine.Auditor, upstreamOf func(string) string, log *slog.Logger) (*selection.Learning, func() error) {
	if pol.Selection.Learn.Off {
		return nil, nil
	}
	l := &selection.Learning{Options: selection.LearnOptions{HalfLife: pol.Selection.Learn.HalfLife}, Logger: log}
	var closer func() error
	switch {
	case rc != nil:
		prefix := pol.State.Redis.Prefix
		if prefix == "" {
			prefix = policy.DefaultRedisPrefix
		}
		l.Log = store.NewRedisUsage(rc, prefix)
	default:
		if b, err := store.OpenBoltUsage(filepath.Join(stateDir(), "usage.db"), 500*time.Millisecond); err != nil {
			log.Warn("tool search learns in memory only", "err", err)
		} else {
			l.Log, closer = b, b.Close
		}
	}
	var hits metric.Int64Counter
	if mp != nil {
		hits, _ = mp.Meter("github.com/toolgate/toolgate/selection").Int64Counter(metricSelectionHit, metric.WithUnit("{call}"),
			metric.WithDescription("calls that followed a tool_search by the same caller, by where the search had ranked the tool called (first, top5, lower, not_found) and its upstream"))
	}
	l.OnHit = func(h selection.Hit) {
		up := upstreamOf(h.Tool)
		if hits != nil {
			hits.Add(context.Background(), 1, metric.WithAttributes(attribute.String("toolgate.selection.rank", rankClass(h.Rank)),
				attribute.String("toolgate.upstream", up)))
		}
		if auditor != nil {
			if err := auditor.Append(context.Background(), hitRecord(h, up)); err != nil {
				log.Error("audit log write failed", "err", err)
			}
		}
	}
	return l, closer
}

// hitRecord is the audit record of a learned pair: the pseudo-tool
// selection:TOOL, the outcome where the search had ranked it (first, top5,
// lower, not_found), and as arguments the query (redacted as the search's
// own record), the rank, the upstream and the definition's hash. toolgate
// search --usage-from and --report read these.
func hitRecord(h selection.Hit, upstream string) audit.Record {
	args, _ := json.Marshal(hitArgs{Query: h.Query, Rank: h.Rank, Upstream: upstream, Definition: h.Definition})
	return audit.Record{Time: h.Time, Tool: hitPrefix + h.Tool, Principal: h.Principal, Session: h.Session, Arguments: args,
		Mode: "learn", Outcome: rankClass(h.Rank), Rule: "the tool called after a tool_search by the same caller"}
}

// hitPrefix starts the pseudo-tool of a learned pair's audit record.
const hitPrefix = "selection:"

type hitArgs struct {
	Query      string `json:"query"`
	Rank       int    `json:"rank"`
	Upstream   string `json:"upstream,omitempty"`
	Definition string `json:"definition,omitempty"`
}

// metricSelectionHit is the metric of how well tool search ranked.
const metricSelectionHit = "toolgate.selection.hit"

// rankClass is a rank as the report and the metric count it.
func rankClass(rank int) string {
	switch {
	case rank == 1:
		return "first"
	case rank >= 2 && rank <= 5:
		return "top5"
	case rank > 5:
		return "lower"
	}
	return "not_found"
}

// noUpstream is upstreamOf for serve: every tool is built in.
func noUpstream(string) string { return "" }

// deferUpstreams hides the gateway's tools behind tool_search (proxy
// --defer-tools), which learns from the calls that follow unless the policy
// says selection.learn: false. A tool its pin quarantines is never boosted
// by what was learned; one the policy refuses a caller is not boosted for
// it either.
func deferUpstreams(reg *registry.Registry, eng *engine.Engine, pol *policy.Policy, rc *redis.Client, mp metric.MeterProvider,
	hook *learnHook, vetter *pinVetter, cfgs []mcpclient.Config, log *slog.Logger) (*selection.Deferred, func() error, error) {
	prefixes := map[string]string{}
	for _, c := range cfgs {
		if !c.NoPrefix {
			sep := c.Separator
			if sep == "" {
				sep = mcpclient.DefaultSeparator
			}
			pre := c.Prefix
			if pre == "" {
				pre = c.Name
			}
			prefixes[c.Name] = pre + sep
		}
	}
	upstreamOf := func(name string) string {
		best := ""
		for up, p := range prefixes {
			if strings.HasPrefix(name, p) && len(p) > len(prefixes[best]) {
				best = up
			}
		}
		return best
	}
	o := selection.DeferOptions{Visible: eng.Visible}
	l, closer := learning(pol, rc, mp, hook.next, upstreamOf, log)
	if l != nil {
		l.Boost = func(def tool.Definition, call tool.Call) bool {
			if pol.Hides(def, call) {
				return false
			}
			for _, tag := range def.Tags {
				if up, ok := strings.CutPrefix(tag, "mcp:"); ok && vetter.quarantined(up, strings.TrimPrefix(def.Name, prefixes[up])) {
					return false
				}
			}
			return true
		}
		o.Learn = l
	}
	d, err := selection.Defer(reg, o)
	if err != nil {
		return nil, closer, err
	}
	if err := reg.Register(d.Tool()); err != nil {
		d.Close()
		return nil, closer, err
	}
	if l != nil {
		hook.d.Store(d)
	}
	return d, closer, nil
}
