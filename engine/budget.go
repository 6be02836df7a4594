package engine

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/toolgate/toolgate/tool"
)

// budget caps the text that goes back to the model. A longer text is cut at
// a character boundary with a note saying how much was left out; the result's
// metadata records the sizes.
func (e *Engine) budget(next handler) handler {
	max := e.opts.MaxResultBytes
	if max < 0 {
		return next
	}
	return func(ctx context.Context, p *pending) tool.Result {
		res := next(ctx, p)
		total := 0
		for _, c := range res.Content {
			total += len(c.Text) + len(c.Data)
		}
		if total <= max {
			return res
		}
		left := max
		content := make([]tool.Content, 0, len(res.Content))
		for _, c := range res.Content {
			size := len(c.Text) + len(c.Data)
			switch {
			case size <= left:
				left -= size
			case c.Type == "text":
				n := left
				for n > 0 && !utf8.RuneStart(c.Text[n]) {
					n-- // never cut a character in two
				}
				cut := c.Text[:n]
				c.Text = cut + fmt.Sprintf("\n…[output truncated: showing %d of %d bytes. Ask for less: a narrower query, a smaller range or a limit]", len(cut), len(c.Text))
				left = 0
			default:
				c = tool.TextContent(fmt.Sprintf("[%s content of %d bytes left out: over the output budget]", c.Type, size))
				left = 0
			}
			content = append(content, c)
		}
		res.Content = content
		res = withMeta(res, "truncated", map[string]int{"bytes": total, "limit": max})
		return res
	}
}
