package console

import (
	"fmt"
	"html/template"
	"time"

	"github.com/toolgate/toolgate/tool"
)

var funcs = template.FuncMap{
	// when writes a time in UTC, to the second.
	"when": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	// iso is a time for <time datetime>.
	"iso": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	// ago says how long ago, roughly.
	"ago": func(t time.Time) string {
		d := time.Since(t).Round(time.Second)
		switch {
		case d < time.Minute:
			return fmt.Sprintf("%ds ago", int(d.Seconds()))
		case d < time.Hour:
			return fmt.Sprintf("%dm ago", int(d.Minutes()))
		}
		return fmt.Sprintf("%dh%02dm ago", int(d.Hours()), int(d.Minutes())%60)
	},
	"level": levelName,
	"list":  func(s ...string) []string { return s },
	"rate": func(perSecond float64) string {
		if perSecond >= 1 {
			return fmt.Sprintf("%g/s", perSecond)
		}
		return fmt.Sprintf("%g/min", perSecond*60)
	},
}

// levelName names a level (a tool.Level, or an int as a queue holds it).
func levelName(v any) string {
	var l tool.Level
	switch x := v.(type) {
	case tool.Level:
		l = x
	case int:
		l = tool.Level(x)
	default:
		return fmt.Sprint(v)
	}
	switch l {
	case tool.LevelRead:
		return "0 read-only"
	case tool.LevelWrite:
		return "1 low-risk write"
	case tool.LevelMedium:
		return "2 medium"
	case tool.LevelHigh:
		return "3 high"
	}
	return fmt.Sprint(int(l))
}
