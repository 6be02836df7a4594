package cli

import (
	"context"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/sandbox"
)

// levelRank is the value of the metric toolgate.sandbox.level.
func levelRank(level string) int64 {
	switch level {
	case sandbox.LevelFull:
		return 2
	case sandbox.LevelReduced:
		return 1
	}
	return 0
}

// reportLevel makes the sandbox level known where an operator looks: one
// audit record of the pseudo-tool "sandbox" (outcome the level, rule the
// missing layers and what gives them), and the gauge toolgate.sandbox.level
// (2 full, 1 reduced, 0 none; labelled by level and backend) when there
// is a meter. /readyz carries it too (serveHTTP).
func reportLevel(ctx context.Context, l sandbox.Level, require string, a engine.Auditor, mp metric.MeterProvider) {
	if a != nil {
		rule := "require " + require
		if len(l.Missing) > 0 {
			rule += "; missing: " + strings.Join(l.Missing, ", ")
		}
		if len(l.Remedies) > 0 {
			rule += "; to get them: " + strings.Join(l.Remedies, "; ")
		}
		mode := "commands run"
		switch {
		case l.Level == sandbox.LevelNone:
			mode = "command tools not offered"
		case !l.Meets(require):
			mode = "commands refused (sandbox_violation)"
		}
		if err := a.Append(ctx, audit.Record{Tool: "sandbox", Mode: mode, Outcome: l.Level, Rule: rule}); err != nil {
			slog.Error("audit log write failed", "err", err)
		}
	}
	if mp != nil {
		attrs := metric.WithAttributes(attribute.String("toolgate.sandbox.level", l.Level), attribute.String("toolgate.sandbox.backend", l.Backend))
		g, err := mp.Meter("github.com/toolgate/toolgate/internal/cli").Int64ObservableGauge("toolgate.sandbox.level",
			metric.WithDescription("how strongly commands are confined: 2 full, 1 reduced, 0 none (measured at start)"))
		if err == nil {
			mp.Meter("github.com/toolgate/toolgate/internal/cli").RegisterCallback(func(_ context.Context, o metric.Observer) error {
				o.ObserveInt64(g, levelRank(l.Level), attrs)
				return nil
			}, g)
		}
	}
}
