package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/telemetry"
	"github.com/toolgate/toolgate/tool"
)

// telemetryRig is an engine whose spans go to a SpanRecorder and whose
// metrics to a ManualReader.
type telemetryRig struct {
	e     *engine.Engine
	spans *tracetest.SpanRecorder
	tp    *sdktrace.TracerProvider
	rd    *sdkmetric.ManualReader
}

type noteIn struct {
	Name string `json:"name"`
	Text string `json:"text,omitempty"`
}

func newTelemetryRig(t *testing.T, o engine.Options) *telemetryRig {
	t.Helper()
	r := &telemetryRig{spans: tracetest.NewSpanRecorder(), rd: sdkmetric.NewManualReader()}
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.rd))
	t.Cleanup(func() { r.tp.Shutdown(context.Background()); mp.Shutdown(context.Background()) })
	if o.Registry == nil {
		o.Registry = telemetryTools(t)
	}
	if o.Policy == nil {
		pol, err := policy.Parse([]byte("deny:\n  - rule: wipe_notes\n    reason: wiping is not allowed\nask:\n  - rule: send_note\n"))
		if err != nil {
			t.Fatal(err)
		}
		o.Policy = pol
	}
	o.TracerProvider, o.MeterProvider = r.tp, mp
	r.e = engine.New(o)
	return r
}

// telemetryTools: a read, a write the policy asks about, one it denies, a
// tool that fails, one that asks for approval itself, a tool of an
// upstream MCP server, and one that starts a child span of its own.
func telemetryTools(t *testing.T) *registry.Registry {
	reg := registry.New()
	ok := func(context.Context, noteIn) (string, error) { return "done", nil }
	err := reg.Register(
		tool.New("read_note", "Reads a note.", ok, tool.ReadOnly()),
		tool.New("send_note", "Sends a note.", ok, tool.WithLevel(tool.LevelWrite)),
		tool.New("wipe_notes", "Wipes the notes.", ok, tool.WithLevel(tool.LevelWrite)),
		tool.New("broken_note", "Fails.", func(context.Context, noteIn) (string, error) {
			return "", errors.New("the disk is full: secret-token-123")
		}, tool.ReadOnly()),
		tool.New("burn_note", "Burns a note; asks first.", func(ctx context.Context, in noteIn) (string, error) {
			if !tool.Approved(ctx) {
				return "", tool.NeedsApproval("burning cannot be undone")
			}
			return "burnt", nil
		}, tool.WithLevel(tool.LevelWrite)),
		tool.Func(tool.Definition{Name: "upstream_search", Description: "An upstream tool.", InputSchema: json.RawMessage(`{"type":"object"}`),
			Annotations: tool.Annotations{ReadOnly: true}, Tags: []string{"mcp", "mcp:docs"}},
			func(context.Context, tool.Call) (tool.Result, error) { return tool.TextResult("found"), nil }),
		tool.New("sandboxed_note", "Runs something that traces itself.", func(ctx context.Context, in noteIn) (string, error) {
			_, span := trace.SpanFromContext(ctx).TracerProvider().Tracer("test").Start(ctx, telemetry.SpanSandbox,
				trace.WithAttributes(telemetry.SandboxBackend.String("dry-run")))
			span.End()
			return "ran", nil
		}, tool.ReadOnly()),
	)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// tree renders the recorded spans as an indented tree, children in start
// order: name, kind, status, and every attribute sorted by key. It is what
// the tests compare, whole.
func tree(spans []sdktrace.ReadOnlySpan) string {
	children := map[trace.SpanID][]sdktrace.ReadOnlySpan{}
	ids := map[trace.SpanID]bool{}
	for _, s := range spans {
		ids[s.SpanContext().SpanID()] = true
	}
	var roots []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if p := s.Parent().SpanID(); p.IsValid() && ids[p] {
			children[p] = append(children[p], s)
		} else {
			roots = append(roots, s)
		}
	}
	var b strings.Builder
	var walk func(s sdktrace.ReadOnlySpan, depth int)
	walk = func(s sdktrace.ReadOnlySpan, depth int) {
		attrs := make([]string, 0, len(s.Attributes()))
		for _, kv := range s.Attributes() {
			attrs = append(attrs, string(kv.Key)+"="+kv.Value.Emit())
		}
		sort.Strings(attrs)
		fmt.Fprintf(&b, "%s%s [%s %s] %s\n", strings.Repeat("  ", depth), s.Name(), s.SpanKind(), s.Status().Code, strings.Join(attrs, " "))
		kids := children[s.SpanContext().SpanID()]
		sort.SliceStable(kids, func(i, j int) bool { return kids[i].StartTime().Before(kids[j].StartTime()) })
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	return b.String()
}

func approver(yes bool) policy.Approver {
	return policy.ApproverFunc(func(context.Context, policy.Request) (policy.Approval, error) {
		return policy.Approval{Approved: yes, Approver: "test", Scope: policy.Once}, nil
	})
}

// TestTelemetrySpans: each governed call is one INTERNAL span
// "execute_tool {tool}" with the GenAI attributes and the decision, and
// child spans for the approval wait and the run; a tool's own span is a
// child of the run. Arguments, results and error messages never appear.
func TestTelemetrySpans(t *testing.T) {
	const (
		root = "gen_ai.operation.name=execute_tool gen_ai.tool.call.id=c1"
		run  = "toolgate.run [internal Unset] gen_ai.tool.name="
	)
	cases := []struct {
		name    string
		opts    engine.Options
		call    tool.Call
		want    string
		errType tool.ErrorType
		before  int // identical calls made first, whose spans are not compared
	}{{
		name: "allowed",
		call: tool.Call{Name: "read_note", Args: json.RawMessage(`{"name":"a"}`)},
		want: "execute_tool read_note [internal Unset] " + root + " gen_ai.tool.name=read_note gen_ai.tool.type=function toolgate.approval=none toolgate.decision=allow toolgate.rule=level:0\n" +
			"  " + run + "read_note\n",
	}, {
		name: "allowed, with a principal, an MCP upstream tool",
		call: tool.Call{Name: "upstream_search", Args: json.RawMessage(`{"name":"a"}`), Principal: "alice"},
		want: "execute_tool upstream_search [internal Unset] " + root + " gen_ai.tool.name=upstream_search gen_ai.tool.type=extension toolgate.approval=none toolgate.decision=allow toolgate.principal=alice toolgate.rule=level:0\n" +
			"  " + run + "upstream_search\n",
	}, {
		name:    "denied by a rule",
		call:    tool.Call{Name: "wipe_notes", Args: json.RawMessage(`{"name":"a"}`)},
		errType: tool.PermissionDenied,
		want:    "execute_tool wipe_notes [internal Error] error.type=permission_denied " + root + " gen_ai.tool.name=wipe_notes gen_ai.tool.type=function toolgate.approval=none toolgate.decision=deny toolgate.error.type=permission_denied toolgate.rule=deny:wipe_notes\n",
	}, {
		name: "asked and approved",
		opts: engine.Options{Approver: approver(true)},
		call: tool.Call{Name: "send_note", Args: json.RawMessage(`{"name":"a"}`)},
		want: "execute_tool send_note [internal Unset] " + root + " gen_ai.tool.name=send_note gen_ai.tool.type=function toolgate.approval=approved toolgate.decision=ask toolgate.rule=ask:send_note\n" +
			"  toolgate.approval [internal Unset] gen_ai.tool.name=send_note toolgate.approval=approved toolgate.rule=ask:send_note\n" +
			"  " + run + "send_note\n",
	}, {
		name:    "asked and refused",
		opts:    engine.Options{Approver: approver(false)},
		call:    tool.Call{Name: "send_note", Args: json.RawMessage(`{"name":"a"}`)},
		errType: tool.ApprovalDenied,
		want: "execute_tool send_note [internal Error] error.type=approval_denied " + root + " gen_ai.tool.name=send_note gen_ai.tool.type=function toolgate.approval=denied toolgate.decision=ask toolgate.error.type=approval_denied toolgate.rule=ask:send_note\n" +
			"  toolgate.approval [internal Unset] gen_ai.tool.name=send_note toolgate.approval=denied toolgate.rule=ask:send_note\n",
	}, {
		name:    "asked with no one to ask",
		call:    tool.Call{Name: "send_note", Args: json.RawMessage(`{"name":"a"}`)},
		errType: tool.ApprovalDenied,
		want:    "execute_tool send_note [internal Error] error.type=approval_denied " + root + " gen_ai.tool.name=send_note gen_ai.tool.type=function toolgate.approval=none toolgate.decision=ask toolgate.error.type=approval_denied toolgate.rule=ask:send_note\n",
	}, {
		name: "the tool asks, and is approved: two runs",
		opts: engine.Options{Approver: approver(true)},
		call: tool.Call{Name: "burn_note", Args: json.RawMessage(`{"name":"a"}`)},
		want: "execute_tool burn_note [internal Unset] " + root + " gen_ai.tool.name=burn_note gen_ai.tool.type=function toolgate.approval=approved toolgate.decision=ask toolgate.rule=tool:burn_note\n" +
			"  toolgate.run [internal Error] error.type=permission_denied gen_ai.tool.name=burn_note\n" +
			"  toolgate.approval [internal Unset] gen_ai.tool.name=burn_note toolgate.approval=approved toolgate.rule=tool:burn_note\n" +
			"  " + run + "burn_note\n",
	}, {
		name:    "the tool fails",
		call:    tool.Call{Name: "broken_note", Args: json.RawMessage(`{"name":"a"}`)},
		errType: tool.Internal,
		want: "execute_tool broken_note [internal Error] error.type=internal " + root + " gen_ai.tool.name=broken_note gen_ai.tool.type=function toolgate.approval=none toolgate.decision=allow toolgate.error.type=internal toolgate.rule=level:0\n" +
			"  toolgate.run [internal Error] error.type=internal gen_ai.tool.name=broken_note\n",
	}, {
		name: "the tool starts its own span",
		call: tool.Call{Name: "sandboxed_note", Args: json.RawMessage(`{"name":"a"}`)},
		want: "execute_tool sandboxed_note [internal Unset] " + root + " gen_ai.tool.name=sandboxed_note gen_ai.tool.type=function toolgate.approval=none toolgate.decision=allow toolgate.rule=level:0\n" +
			"  " + run + "sandboxed_note\n" +
			"    toolgate.sandbox [internal Unset] toolgate.sandbox.backend=dry-run\n",
	}, {
		name:    "rate limited",
		opts:    engine.Options{Limiter: policy.NewLimiter(policy.LimitConfig{Tools: map[string]policy.Rate{"*": {PerSecond: 0.001, Burst: 1}}, Loop: policy.LoopConfig{Off: true}})},
		call:    tool.Call{Name: "read_note", Args: json.RawMessage(`{"name":"a"}`)},
		before:  1,
		errType: tool.RateLimited,
		want:    "execute_tool read_note [internal Error] error.type=rate_limited " + root + " gen_ai.tool.name=read_note gen_ai.tool.type=function toolgate.approval=none toolgate.decision=allow toolgate.error.type=rate_limited toolgate.rule=level:0\n",
	}, {
		name:    "an unknown tool: the made-up name stays out",
		call:    tool.Call{Name: "read_notes_please", Args: json.RawMessage(`{"name":"a"}`)},
		errType: tool.UnknownTool,
		want:    "execute_tool [internal Error] error.type=unknown_tool " + root + " toolgate.error.type=unknown_tool\n",
	}, {
		name:    "malformed arguments",
		call:    tool.Call{Name: "read_note", Args: json.RawMessage(`{"name":`)},
		errType: tool.InvalidArguments,
		want:    "execute_tool read_note [internal Error] error.type=invalid_arguments " + root + " gen_ai.tool.name=read_note gen_ai.tool.type=function toolgate.error.type=invalid_arguments\n",
	}, {
		name: "argument names, when asked for",
		opts: engine.Options{TelemetryArgumentNames: true},
		call: tool.Call{Name: "read_note", Args: json.RawMessage(`{"text":"secret-token-123","name":"a"}`)},
		want: "execute_tool read_note [internal Unset] " + root + " gen_ai.tool.name=read_note gen_ai.tool.type=function toolgate.approval=none toolgate.argument.names=[\"name\",\"text\"] toolgate.decision=allow toolgate.rule=level:0\n" +
			"  " + run + "read_note\n",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newTelemetryRig(t, tc.opts)
			tc.call.ID = "c1"
			for range tc.before {
				r.e.Execute(context.Background(), tc.call)
			}
			seen := len(r.spans.Ended())
			res := r.e.Execute(context.Background(), tc.call)
			if tc.errType == "" && res.IsError() || tc.errType != "" && (res.Error == nil || res.Error.Type != tc.errType) {
				t.Fatalf("result %+v, want error type %q", res, tc.errType)
			}
			got := tree(r.spans.Ended()[seen:])
			if got != tc.want {
				t.Errorf("spans:\n%s\nwant:\n%s", got, tc.want)
			}
			for _, s := range r.spans.Ended() {
				for _, kv := range s.Attributes() {
					if v := kv.Value.Emit(); strings.Contains(v, "secret-token") || strings.Contains(v, "done") && kv.Key != "" {
						t.Errorf("span %s attribute %s = %q carries an argument or a result", s.Name(), kv.Key, v)
					}
				}
				if strings.Contains(s.Status().Description, "secret") || strings.Contains(s.Status().Description, " ") {
					t.Errorf("span %s status %q is more than an error type", s.Name(), s.Status().Description)
				}
			}
		})
	}
}

// TestTelemetryParent: the call's span is the child of the span in the
// caller's context (an MCP server span, an agent's), in the same trace.
func TestTelemetryParent(t *testing.T) {
	r := newTelemetryRig(t, engine.Options{})
	ctx, parent := r.tp.Tracer("caller").Start(context.Background(), "tools/call read_note", trace.WithSpanKind(trace.SpanKindServer))
	r.e.Execute(ctx, tool.Call{Name: "read_note", Args: json.RawMessage(`{"name":"a"}`)})
	parent.End()
	ended := r.spans.Ended()
	if len(ended) != 3 {
		t.Fatalf("%d spans, want run, execute_tool and the caller's", len(ended))
	}
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range ended {
		byName[s.Name()] = s
	}
	exec, run := byName["execute_tool read_note"], byName[telemetry.SpanRun]
	if exec == nil || run == nil {
		t.Fatalf("spans %s", tree(ended))
	}
	if exec.Parent().SpanID() != parent.SpanContext().SpanID() || exec.SpanContext().TraceID() != parent.SpanContext().TraceID() {
		t.Errorf("execute_tool's parent is %s, want the caller's span %s", exec.Parent().SpanID(), parent.SpanContext().SpanID())
	}
	if run.Parent().SpanID() != exec.SpanContext().SpanID() {
		t.Errorf("the run's parent is not execute_tool")
	}
	if got := tree(ended[2:]); got != "tools/call read_note [server Unset] \n" {
		t.Errorf("the caller's span was changed without AnnotateSpan: %s", got)
	}
}

// TestTelemetryAnnotateSpan: asked to (AnnotateSpan), the engine sets the
// decision on the caller's span too; a call that ends before the policy
// leaves it alone.
func TestTelemetryAnnotateSpan(t *testing.T) {
	for _, tc := range []struct {
		opts engine.Options
		call string
		want string
	}{
		{engine.Options{}, "read_note", "toolgate.approval=none toolgate.decision=allow toolgate.rule=level:0"},
		{engine.Options{Approver: approver(true)}, "send_note", "toolgate.approval=approved toolgate.decision=ask toolgate.rule=ask:send_note"},
		{engine.Options{Approver: approver(false)}, "send_note", "toolgate.approval=denied toolgate.decision=ask toolgate.rule=ask:send_note"},
		{engine.Options{}, "wipe_notes", "toolgate.approval=none toolgate.decision=deny toolgate.rule=deny:wipe_notes"},
		{engine.Options{}, "no_such_tool", ""},
	} {
		r := newTelemetryRig(t, tc.opts)
		ctx, parent := r.tp.Tracer("caller").Start(context.Background(), "tools/call", trace.WithSpanKind(trace.SpanKindServer))
		r.e.Execute(engine.AnnotateSpan(ctx), tool.Call{Name: tc.call, Args: json.RawMessage(`{"name":"a"}`)})
		parent.End()
		ended := r.spans.Ended()
		if got, want := tree(ended[len(ended)-1:]), "tools/call [server Unset] "+tc.want+"\n"; got != want {
			t.Errorf("%s: the caller's span is\n%s want\n%s", tc.call, got, want)
		}
	}
}

// TestTelemetryMetrics: toolgate.calls by tool, decision and error type;
// toolgate.approvals by outcome; toolgate.rate_limited and
// toolgate.loop_detected; a made-up tool name never becomes a label.
func TestTelemetryMetrics(t *testing.T) {
	r := newTelemetryRig(t, engine.Options{
		Approver: policy.ApproverFunc(func(_ context.Context, req policy.Request) (policy.Approval, error) {
			var in noteIn
			json.Unmarshal(req.Call.Args, &in)
			return policy.Approval{Approved: in.Name != "no", Approver: "test"}, nil
		}),
		Limiter: policy.NewLimiter(policy.LimitConfig{
			Tools: map[string]policy.Rate{"send_note": {PerSecond: 0.001, Burst: 3}},
			Loop:  policy.LoopConfig{Max: 2},
		}),
	})
	ctx := context.Background()
	call := func(name, args string) {
		r.e.Execute(ctx, tool.Call{Name: name, Args: json.RawMessage(args), Session: "s"})
	}
	call("read_note", `{"name":"1"}`)
	call("read_note", `{"name":"2"}`)
	call("read_note", `{"name":"same"}`)
	call("read_note", `{"name":"same"}`)
	call("read_note", `{"name":"same"}`) // the third identical call: a loop
	call("send_note", `{"name":"yes"}`)
	call("send_note", `{"name":"no"}`)
	call("send_note", `{"name":"yes2"}`)
	call("send_note", `{"name":"yes3"}`)
	call("send_note", `{"name":"yes4"}`) // the fourth that passes the policy: over the burst of 3
	call("wipe_notes", `{"name":"a"}`)
	for i := range 5 {
		call(fmt.Sprintf("made_up_%d", i), `{}`)
	}

	var rm metricdata.ResourceMetrics
	if err := r.rd.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != "github.com/toolgate/toolgate/engine" {
			t.Errorf("scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok || !sum.IsMonotonic {
				t.Errorf("%s is %T, want a monotonic int64 counter", m.Name, m.Data)
				continue
			}
			got[m.Name] = map[string]int64{}
			for _, dp := range sum.DataPoints {
				got[m.Name][labels(dp.Attributes)] += dp.Value
			}
		}
	}
	tool, dec, errt, appr := string(telemetry.GenAIToolName), string(telemetry.Decision), string(telemetry.ToolgateError), string(telemetry.Approval)
	want := map[string]map[string]int64{
		telemetry.MetricCalls: {
			tool + "=read_note " + dec + "=allow":                                4,
			tool + "=read_note " + dec + "=allow " + errt + "=loop_detected":     1,
			tool + "=send_note " + dec + "=ask":                                  3,
			tool + "=send_note " + dec + "=ask " + errt + "=approval_denied":     1,
			tool + "=send_note " + dec + "=ask " + errt + "=rate_limited":        1,
			tool + "=wipe_notes " + dec + "=deny " + errt + "=permission_denied": 1,
			errt + "=unknown_tool":                                               5,
		},
		telemetry.MetricApprovals: {
			tool + "=send_note " + appr + "=approved": 4,
			tool + "=send_note " + appr + "=denied":   1,
		},
		telemetry.MetricRateLimited:  {tool + "=send_note": 1},
		telemetry.MetricLoopDetected: {tool + "=read_note": 1},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("metrics:\n%v\nwant:\n%v", got, want)
	}
}

func labels(s attribute.Set) string {
	var kv []string
	for _, a := range s.ToSlice() {
		kv = append(kv, string(a.Key)+"="+a.Value.Emit())
	}
	sort.Slice(kv, func(i, j int) bool { return order(kv[i]) < order(kv[j]) })
	return strings.Join(kv, " ")
}

// order sorts labels as the want table lists them: tool, decision, error, approval.
func order(kv string) int {
	return slices.IndexFunc([]string{"gen_ai.tool.name=", "toolgate.decision=", "toolgate.error.type=", "toolgate.approval="},
		func(p string) bool { return strings.HasPrefix(kv, p) })
}

// TestTelemetryOff: with no providers, or no-op ones, nothing is recorded
// and a call costs no allocation more than without telemetry.
func TestTelemetryOff(t *testing.T) {
	reg := telemetryTools(t)
	call := tool.Call{ID: "c1", Name: "read_note", Args: json.RawMessage(`{"name":"a"}`)}
	ctx := context.Background()
	allocs := func(o engine.Options) float64 {
		o.Registry = reg
		e := engine.New(o)
		e.Execute(ctx, call)
		return testing.AllocsPerRun(200, func() { e.Execute(ctx, call) })
	}
	base := allocs(engine.Options{})
	noop := allocs(engine.Options{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()})
	if noop > base {
		t.Errorf("no-op providers: %.0f allocations a call, %.0f without telemetry", noop, base)
	}
	on := allocs(engine.Options{TracerProvider: sdktrace.NewTracerProvider()})
	if on <= base {
		t.Errorf("a real tracer provider: %.0f allocations a call, no more than %.0f without: is it used at all?", on, base)
	}
}

// TestTelemetryNames: the engine's names are package telemetry's.
func TestTelemetryNames(t *testing.T) {
	r := newTelemetryRig(t, engine.Options{Approver: approver(true)})
	r.e.Execute(context.Background(), tool.Call{ID: "c1", Name: "send_note", Args: json.RawMessage(`{"name":"a"}`), Principal: "p"})
	keys := map[attribute.Key]bool{}
	names := map[string]bool{}
	for _, s := range r.spans.Ended() {
		names[strings.Fields(s.Name())[0]] = true
		for _, kv := range s.Attributes() {
			keys[kv.Key] = true
		}
	}
	for _, k := range []attribute.Key{telemetry.GenAIOperationName, telemetry.GenAIToolName, telemetry.GenAIToolCallID, telemetry.GenAIToolType,
		telemetry.Decision, telemetry.Rule, telemetry.Approval, telemetry.Principal} {
		if !keys[k] {
			t.Errorf("no span has %s", k)
		}
	}
	for _, n := range []string{telemetry.SpanExecuteTool, telemetry.SpanApproval, telemetry.SpanRun} {
		if !names[n] {
			t.Errorf("no span is named %s", n)
		}
	}
}
