package engine

import (
	"context"

	"github.com/toolgate/toolgate/schema"
	"github.com/toolgate/toolgate/tool"
)

// validate checks the arguments against the tool's input schema and lists
// every failing field.
func (e *Engine) validate(next handler) handler {
	return func(ctx context.Context, p *pending) tool.Result {
		if errs := p.schema.Validate(p.args); len(errs) > 0 {
			return tool.ErrorResult(schema.ValidationError(p.def.Name, errs))
		}
		return next(ctx, p)
	}
}
