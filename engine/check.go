package engine

import (
	"context"

	"github.com/toolgate/toolgate/tool"
)

// ResultChecker looks at what a tool returned before the model sees it and
// returns what the model should see: the result itself, the result with
// the parts it distrusts marked, or an error in its place. trust.ResultCheck
// is one (it looks for injected instructions). A flagged result says what
// was found in Meta["flagged"] (kinds, comma-separated), which the audit
// record's outcome repeats: "ok (flagged: KINDS)".
type ResultChecker interface {
	Check(ctx context.Context, def tool.Definition, call tool.Call, res tool.Result) tool.Result
}

// check runs the ResultChecker over every result the tool gives, built in,
// an upstream's or a library's: after the run and before the budget, so
// that a result cut to a preview and the spill file of the whole carry the
// same marks.
func (e *Engine) check(next handler) handler {
	rc := e.opts.ResultChecker
	if rc == nil {
		return next
	}
	return func(ctx context.Context, p *pending) tool.Result {
		return rc.Check(ctx, p.def, p.call, next(ctx, p))
	}
}
