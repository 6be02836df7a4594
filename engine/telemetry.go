package engine

import (
	"context"
	"maps"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/tool"
)

// The names the engine's spans, attributes and metrics use. They are those
// of package telemetry (the engine does not import it: it takes only the
// OpenTelemetry API), checked against it by the engine's tests.
const (
	scope = "github.com/toolgate/toolgate/engine"

	spanExecuteTool = "execute_tool"
	spanApproval    = "toolgate.approval"
	spanRun         = "toolgate.run"

	attrOperation  = attribute.Key("gen_ai.operation.name")
	attrToolName   = attribute.Key("gen_ai.tool.name")
	attrCallID     = attribute.Key("gen_ai.tool.call.id")
	attrToolType   = attribute.Key("gen_ai.tool.type")
	attrErrorType  = attribute.Key("error.type")
	attrDecision   = attribute.Key("toolgate.decision")
	attrRule       = attribute.Key("toolgate.rule")
	attrApproval   = attribute.Key("toolgate.approval")
	attrPrincipal  = attribute.Key("toolgate.principal")
	attrToolError  = attribute.Key("toolgate.error.type")
	attrArgNames   = attribute.Key("toolgate.argument.names")
	metricCalls    = "toolgate.calls"
	metricApproved = "toolgate.approvals"
	metricLimited  = "toolgate.rate_limited"
	metricLooping  = "toolgate.loop_detected"
)

// instruments are the engine's tracer and counters; a nil tracer means no
// spans and nil counters no metrics, so that telemetry that is off costs
// one nil check per stage and nothing else.
type instruments struct {
	tracer                             trace.Tracer
	calls, approvals, limited, looping metric.Int64Counter
	argNames                           bool
}

// newInstruments takes the providers of o; nil or no-op ones are none.
func newInstruments(o Options) (in instruments) {
	if tp := o.TracerProvider; tp != nil {
		if _, noop := tp.(tracenoop.TracerProvider); !noop {
			in.tracer = tp.Tracer(scope)
		}
	}
	if mp := o.MeterProvider; mp != nil {
		if _, noop := mp.(metricnoop.MeterProvider); !noop {
			m := mp.Meter(scope)
			// The SDK returns a working no-op instrument with its error, so
			// an error (a name the SDK refuses) leaves nothing to handle.
			in.calls, _ = m.Int64Counter(metricCalls, metric.WithUnit("{call}"),
				metric.WithDescription("governed tool calls, by tool, policy decision and error type"))
			in.approvals, _ = m.Int64Counter(metricApproved, metric.WithUnit("{approval}"),
				metric.WithDescription("calls put to an approver, by outcome"))
			in.limited, _ = m.Int64Counter(metricLimited, metric.WithUnit("{call}"),
				metric.WithDescription("calls refused by a rate or concurrency limit"))
			in.looping, _ = m.Int64Counter(metricLooping, metric.WithUnit("{call}"),
				metric.WithDescription("calls refused by the loop guard"))
		}
	}
	in.argNames = o.TelemetryArgumentNames
	return in
}

// observe makes each call an INTERNAL span "execute_tool {tool}" around the
// whole chain and counts it when it ends. Neither arguments nor results
// nor error messages go into telemetry (they may hold secrets); with
// Options.TelemetryArgumentNames, the arguments' names do.
func (e *Engine) observe(next handler) handler {
	if e.tel.tracer == nil && e.tel.calls == nil {
		return next
	}
	return func(ctx context.Context, p *pending) tool.Result {
		var span, caller trace.Span
		if e.tel.tracer != nil {
			if ctx.Value(annotateKey{}) != nil {
				caller = trace.SpanFromContext(ctx)
			}
			attrs := []attribute.KeyValue{attrOperation.String(spanExecuteTool), attrCallID.String(p.call.ID)}
			if p.call.Principal != "" {
				attrs = append(attrs, attrPrincipal.String(p.call.Principal))
			}
			// Named for the tool once it is found (endCall).
			ctx, span = e.tel.tracer.Start(ctx, spanExecuteTool, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
		}
		res := next(ctx, p)
		if span != nil {
			e.endCall(span, p, res)
		}
		if caller != nil && p.decision.Effect != "" {
			caller.SetAttributes(governance(p)...)
		}
		if e.tel.calls != nil {
			e.countCall(ctx, p, res)
		}
		return res
	}
}

// endCall adds what became of the call to its span and ends it.
func (e *Engine) endCall(span trace.Span, p *pending, res tool.Result) {
	// An unknown (or hidden) name is the caller's text, unbounded: it
	// names neither the span nor an attribute.
	if p.tool != nil {
		span.SetName(spanExecuteTool + " " + p.def.Name)
		span.SetAttributes(attrToolName.String(p.def.Name), attrToolType.String(toolType(p.def)))
	}
	if p.decision.Effect != "" {
		span.SetAttributes(governance(p)...)
	}
	if e.tel.argNames && len(p.args) > 0 {
		span.SetAttributes(attrArgNames.StringSlice(slices.Sorted(maps.Keys(p.args))))
	}
	if res.Error != nil {
		t := string(res.Error.Type)
		span.SetAttributes(attrErrorType.String(t), attrToolError.String(t))
		span.SetStatus(codes.Error, t) // the type, not the message: a message may quote arguments
	}
	span.End()
}

// governance are the attributes of the policy's decision about a call.
func governance(p *pending) []attribute.KeyValue {
	return []attribute.KeyValue{attrDecision.String(string(p.decision.Effect)), attrRule.String(p.decision.Rule),
		attrApproval.String(approvalOutcome(p.approval))}
}

type annotateKey struct{}

// AnnotateSpan returns a context in which Execute, when it traces, also
// sets the policy's decision about the call (toolgate.decision,
// toolgate.rule, toolgate.approval) on the span in ctx: the caller's span
// of one call, such as the MCP server span of a tools/call.
func AnnotateSpan(ctx context.Context) context.Context {
	return context.WithValue(ctx, annotateKey{}, true)
}

// countCall records the call in toolgate.calls (by tool, decision and error
// type), and in toolgate.rate_limited or toolgate.loop_detected (by tool)
// when a limit refused it. The tool's name is an attribute only for a
// registered tool, so that a caller cannot grow the metrics without bound
// by calling made-up names.
func (e *Engine) countCall(ctx context.Context, p *pending, res tool.Result) {
	attrs := make([]attribute.KeyValue, 0, 3)
	if p.tool != nil {
		attrs = append(attrs, attrToolName.String(p.def.Name))
	}
	byTool := metric.WithAttributes(attrs...)
	if p.decision.Effect != "" {
		attrs = append(attrs, attrDecision.String(string(p.decision.Effect)))
	}
	if res.Error != nil {
		attrs = append(attrs, attrToolError.String(string(res.Error.Type)))
	}
	e.tel.calls.Add(ctx, 1, metric.WithAttributes(attrs...))
	switch {
	case res.Error == nil:
	case res.Error.Type == tool.RateLimited:
		e.tel.limited.Add(ctx, 1, byTool)
	case res.Error.Type == tool.LoopDetected:
		e.tel.looping.Add(ctx, 1, byTool)
	}
}

// approving starts the span of an approval wait (nil when tracing is off).
func (e *Engine) approving(ctx context.Context, p *pending) (context.Context, trace.Span) {
	if e.tel.tracer == nil {
		return ctx, nil
	}
	return e.tel.tracer.Start(ctx, spanApproval, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attrToolName.String(p.def.Name), attrRule.String(p.decision.Rule)))
}

// answered ends the approval wait's span with the answer (nil and the error
// when no one could be asked) and counts the answer in toolgate.approvals.
func (e *Engine) answered(ctx context.Context, span trace.Span, p *pending, a *policy.Approval, err *tool.Error) {
	outcome := approvalOutcome(a)
	if span != nil {
		span.SetAttributes(attrApproval.String(outcome))
		if err != nil {
			span.SetAttributes(attrErrorType.String(string(err.Type)))
			span.SetStatus(codes.Error, string(err.Type))
		}
		span.End()
	}
	if e.tel.approvals != nil && a != nil {
		e.tel.approvals.Add(ctx, 1, metric.WithAttributes(attrToolName.String(p.def.Name), attrApproval.String(outcome)))
	}
}

// running starts the span of the tool's own run; a tool starts its child
// spans (a sandboxed command, an upstream MCP request) from the context.
func (e *Engine) running(ctx context.Context, p *pending) (context.Context, trace.Span) {
	return e.tel.tracer.Start(ctx, spanRun, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attrToolName.String(p.def.Name)))
}

// endRun ends the run's span with the tool's outcome.
func endRun(span trace.Span, res tool.Result) {
	if res.Error != nil {
		t := string(res.Error.Type)
		span.SetAttributes(attrErrorType.String(t))
		span.SetStatus(codes.Error, t)
	}
	span.End()
}

// toolType is gen_ai.tool.type: "extension" for a tool of an upstream MCP
// server (tagged "mcp"), "datastore" for one tagged so, else "function".
func toolType(d tool.Definition) string {
	switch {
	case d.HasTag("mcp"):
		return "extension"
	case d.HasTag("datastore"):
		return "datastore"
	}
	return "function"
}

func approvalOutcome(a *policy.Approval) string {
	switch {
	case a == nil:
		return "none"
	case a.Approved:
		return "approved"
	}
	return "denied"
}
