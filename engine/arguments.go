package engine

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/toolgate/toolgate/schema"
	"github.com/toolgate/toolgate/tool"
)

// compiled caches a tool's compiled input schema, keyed by the schema bytes.
type compiled struct {
	raw    []byte
	schema *schema.Schema
	err    error
}

// arguments parses the raw arguments and applies safe, schema-guided repairs,
// each reported in the result's metadata. Malformed JSON is an error, never {}.
func (e *Engine) arguments(next handler) handler {
	return func(ctx context.Context, p *pending) tool.Result {
		s, err := e.compile(p.def)
		if err != nil {
			return tool.ErrorResult(tool.Errorf(tool.Internal, "tool %s has an invalid input schema: %v", p.def.Name, err).
				WithSuggestion("this tool cannot be called until its author fixes its schema; use another tool"))
		}
		p.schema = s
		args, repairable, perr := s.ParseArguments(p.call.Args)
		if perr != nil {
			return tool.ErrorResult(perr)
		}
		if repairable { // else Repair would return args and no repairs
			args, p.repairs = s.Repair(args)
		}
		p.args = args
		if len(p.repairs) > 0 {
			raw, err := json.Marshal(args)
			if err != nil {
				return tool.ErrorResult(tool.Errorf(tool.Internal, "re-encoding repaired arguments: %v", err))
			}
			p.call.Args = raw
		}
		res := next(ctx, p)
		if len(p.repairs) > 0 {
			res = withMeta(res, "repairs", p.repairs)
		}
		return res
	}
}

// compile returns the compiled input schema of def, from the cache when the
// schema bytes are unchanged.
func (e *Engine) compile(def tool.Definition) (*schema.Schema, error) {
	if c, ok := e.schemas.Load(def.Name); ok {
		c := c.(*compiled)
		if bytes.Equal(c.raw, def.InputSchema) {
			return c.schema, c.err
		}
	}
	s, err := schema.Compile(def.InputSchema)
	e.schemas.Store(def.Name, &compiled{raw: bytes.Clone(def.InputSchema), schema: s, err: err})
	return s, err
}

// withMeta returns res with one more metadata entry, without touching a map
// res may share with a stored result.
func withMeta(res tool.Result, key string, value any) tool.Result {
	m := make(map[string]any, len(res.Meta)+1)
	for k, v := range res.Meta {
		m[k] = v
	}
	m[key] = value
	res.Meta = m
	return res
}
