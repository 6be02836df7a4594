package orchestrate

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/toolgate/toolgate/tool"
)

// refusals are error types a fallback never answers for: a refusal is a
// decision, not a failure to route around.
var refusals = []tool.ErrorType{tool.PermissionDenied, tool.ApprovalDenied, tool.SandboxViolation, tool.RateLimited, tool.LoopDetected, tool.CircuitOpen}

// defaultOn are the error types a Fallback answers for when none are given.
var defaultOn = []tool.ErrorType{tool.Unavailable, tool.Timeout, tool.Internal}

// Fallback returns primary, answered by fallback when primary fails with
// one of the error types on (none given: unavailable, timeout, internal).
// It never answers for a refusal (permission_denied, approval_denied,
// sandbox_violation, rate_limited, loop_detected, circuit_open), even when
// listed.
//
// mapArgs turns primary's arguments into fallback's (nil: the same
// arguments); TemplateArgs builds one from a template. The wrapper has
// primary's name, description and schemas, the higher of the two levels,
// and annotations true of both (read-only and idempotent only if both are,
// destructive and open-world if either is), so that policy decides on the
// worse of the two.
//
// When the fallback answers, its result says so: a first text block
// naming both tools and primary's error, and Meta["fallback"] =
// {"from": primary, "to": fallback, "error": primary's *tool.Error}; the
// engine's audit record of the call notes the fallback in its outcome.
// When the fallback fails too, primary's error is returned with
// Details["fallback"] = {"to", "error"}.
func Fallback(primary, fallback tool.Tool, mapArgs func(json.RawMessage) (json.RawMessage, error), on ...tool.ErrorType) tool.Tool {
	if len(on) == 0 {
		on = defaultOn
	}
	def := primary.Definition()
	fdef := fallback.Definition()
	def.Level = max(def.Level, fdef.Level)
	def.Annotations = tool.Annotations{
		ReadOnly:    def.Annotations.ReadOnly && fdef.Annotations.ReadOnly,
		Idempotent:  def.Annotations.Idempotent && fdef.Annotations.Idempotent,
		Destructive: def.Annotations.Destructive || fdef.Annotations.Destructive,
		OpenWorld:   def.Annotations.OpenWorld || fdef.Annotations.OpenWorld,
	}
	def.Tags = append(slices.Clone(def.Tags), "fallback")
	return &fallbackTool{def: def, primary: primary, fallback: fallback, to: fdef.Name, mapArgs: mapArgs, on: on}
}

type fallbackTool struct {
	def               tool.Definition
	primary, fallback tool.Tool
	to                string
	mapArgs           func(json.RawMessage) (json.RawMessage, error)
	on                []tool.ErrorType
}

func (f *fallbackTool) Definition() tool.Definition { return f.def }

func (f *fallbackTool) Run(ctx context.Context, call tool.Call) (tool.Result, error) {
	res, err := f.primary.Run(ctx, call)
	perr := res.Error
	if err != nil {
		perr = tool.AsError(err)
	}
	if perr == nil || !f.answers(perr.Type) || ctx.Err() != nil {
		return res, err
	}
	args := call.Args
	if f.mapArgs != nil {
		if args, err = f.mapArgs(call.Args); err != nil {
			return tool.ErrorResult(perr.WithDetail("fallback", map[string]any{"to": f.to, "error": "its arguments could not be made: " + err.Error()})), nil
		}
	}
	fcall := call
	fcall.Name, fcall.Args = f.to, args
	fres, ferr := f.fallback.Run(ctx, fcall)
	if ferr != nil || fres.Error != nil {
		fe := fres.Error
		if ferr != nil {
			fe = tool.AsError(ferr)
		}
		return tool.ErrorResult(perr.WithDetail("fallback", map[string]any{"to": f.to, "error": fe})), nil
	}
	note := tool.TextContent(fmt.Sprintf("[%s could not answer (%s: %s); %s answered instead]", f.def.Name, perr.Type, perr.Message, f.to))
	fres.Content = append([]tool.Content{note}, fres.Content...)
	meta := make(map[string]any, len(fres.Meta)+1)
	for k, v := range fres.Meta {
		meta[k] = v
	}
	meta["fallback"] = map[string]any{"from": f.def.Name, "to": f.to, "error": perr}
	fres.Meta = meta
	return fres, nil
}

func (f *fallbackTool) answers(t tool.ErrorType) bool {
	return !slices.Contains(refusals, t) && slices.Contains(f.on, t)
}

// TemplateArgs returns a mapArgs for Fallback that builds the fallback's
// arguments from tmpl, a JSON object whose values may be references
// {"$ref": "input.path"} to the primary's arguments. A reference that
// finds no value is an error.
func TemplateArgs(tmpl map[string]any) (func(json.RawMessage) (json.RawMessage, error), error) {
	var ps problems
	for _, site := range findRefs(tmpl, "/args", "", &ps) {
		if site.ref.step != inputRef {
			ps.add("", site.pointer, "a fallback's arguments may refer only to input (the primary's arguments), not to %q", site.ref.step)
		}
	}
	if e := ps.err("fallback template"); e != nil {
		return nil, e
	}
	return func(raw json.RawMessage) (json.RawMessage, error) {
		in := any(map[string]any{})
		if len(raw) > 0 {
			v, err := decode(raw)
			if err != nil {
				return nil, err
			}
			in = v
		}
		sc := scope{input: in, hasInput: true}
		out, u := sc.substitute(tmpl, "/args")
		if u != nil {
			return nil, u
		}
		return json.Marshal(out)
	}, nil
}
