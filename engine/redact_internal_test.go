package engine

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/tool"
)

// redactBefore is the redaction as it was before it read the structured
// value first and before it left a relayed one unencoded: every text
// block read, then the structured value encoded and searched (RedactJSON).
func redactBefore(ctx context.Context, e *Engine, res tool.Result) tool.Result {
	r := e.opts.Redactor
	n := 0
	var content []tool.Content
	for i, c := range res.Content {
		if c.Type != "text" && c.Type != "resource" {
			continue
		}
		t, k := r.Redact(c.Text)
		if k == 0 {
			continue
		}
		if content == nil {
			content = append([]tool.Content(nil), res.Content...)
		}
		content[i].Text = t
		n += k
	}
	if content != nil {
		res.Content = content
	}
	if res.Structured != nil {
		if b, err := tool.MarshalJSON(ctx, res.Structured); err == nil {
			if t, k, _ := r.RedactJSON(string(b)); k > 0 {
				var v any
				if json.Unmarshal([]byte(t), &v) == nil {
					res.Structured, n = v, n+k
				} else {
					res.Structured = nil
				}
			}
		}
	}
	if n > 0 {
		res = withMeta(res, "redacted", n)
	}
	return res
}

// procAnswer has the shape of a process tool's answer: a flat struct
// whose output a text block repeats.
type procAnswer struct {
	ID       string `json:"id,omitempty"`
	State    string `json:"state"`
	ExitCode *int   `json:"exit_code,omitempty"`
	Output   string `json:"output"`
	Cursor   int64  `json:"cursor"`
}

// TestRedactMatchesBefore: the redaction that reads the structured value
// first, and skips a text block that is one of its strings where its
// bytes are quiet, gives exactly the result of the redaction that read
// every block, on random results in an MCP call's context and outside
// one: outputs of plain text, secrets of each kind, their literals beside
// bytes JSON escapes, text outside ASCII; the output repeated as a block,
// or not, or changed; structured values flat, behind a pointer, a map or
// none.
func TestRedactMatchesBefore(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 1))
	red, err := policy.NewRedactor(policy.DefaultSecrets())
	if err != nil {
		t.Fatal(err)
	}
	e := New(Options{Redactor: red})
	pieces := []string{strings.Repeat("1234567\n", 200), "build ok\n", "AKIAABCDEFGHIJKLMNOP", "AKIA", "password=hunter2hunter2",
		"\"api_key\": \"abcdefghijkl\"", "https://user:pa55word@host/x", "token", "\\", "\t", "\"", "<", "&", "\n", "é", "\u2028", "\xff",
		"sk-ant-abcdefghijklmnopqrstuvwxyz", "eyJhbGciOiJI.eyJzdWIiOiIx.c2lnbmF0dXJl", " see the docs\n",
		"\r", "k_live_abcdefghijklmnopqrstuvwx", "rk_live_abcdefghijklmnopqrstuvwx"}
	text := func() string {
		var b strings.Builder
		for range 1 + r.IntN(6) {
			if r.IntN(3) > 0 {
				b.WriteString(pieces[0][:r.IntN(len(pieces[0]))])
			} else {
				b.WriteString(pieces[1+r.IntN(len(pieces)-1)])
			}
		}
		return b.String()
	}
	skipped, relayed, unencoded := 0, 0, 0
	for range 3000 {
		code := 1
		a := procAnswer{ID: "p-1", State: "running", Output: text(), Cursor: r.Int64()}
		if r.IntN(2) == 0 {
			a.ExitCode = &code
		}
		res := tool.Result{Content: []tool.Content{tool.TextContent("process p-1: running")}}
		switch r.IntN(4) {
		case 0, 1:
			res.Content = append(res.Content, tool.TextContent(a.Output))
		case 2:
			res.Content = append(res.Content, tool.TextContent(a.Output+"x"), tool.Content{Type: "resource", Text: a.Output})
		}
		switch r.IntN(7) {
		case 5, 6:
			// Relayed: the map an upstream's bytes were decoded into,
			// its string the output or not, spaced or HTML-escaped or not.
			v := map[string]any{"content": a.Output, "k": []any{"x", 1.5, true}}
			if r.IntN(3) == 0 {
				v["content"] = text()
			}
			var raw strings.Builder
			enc := json.NewEncoder(&raw)
			enc.SetEscapeHTML(r.IntN(2) == 0)
			if r.IntN(3) == 0 {
				enc.SetIndent("", " ")
			}
			if err := enc.Encode(v); err != nil {
				t.Fatal(err)
			}
			var decoded any
			if err := json.Unmarshal([]byte(raw.String()), &decoded); err != nil {
				t.Fatal(err)
			}
			res.Structured = decoded
			res.Relay = tool.NewRelay([]byte("{}"), []byte(strings.TrimSpace(raw.String())), res)
			if raw, ok := res.Relay.StructuredFor(decoded); ok {
				relayed++
				var quiet []string
				for _, c := range res.Content {
					if red.Quiet(c.Text) {
						quiet = append(quiet, c.Text)
					}
				}
				if !red.MayMatchJSON(raw, decoded, quiet) {
					unencoded++
				}
			}
		case 0:
			res.Structured = &a
		case 1:
			res.Structured = map[string]any{"output": a.Output}
		case 2:
		default:
			res.Structured = a
		}
		for _, ctx := range []context.Context{context.Background(), tool.WithEncoded(context.Background())} {
			got := e.redact(ctx, res)
			want := redactBefore(ctx, e, res)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%#v:\n got %#v\nwant %#v", res, got, want)
			}
		}
		if b, err := tool.MarshalJSON(context.Background(), res.Structured); err == nil && len(res.Content) == 2 && res.Content[1].Text == a.Output {
			if _, _, quiet := red.RedactJSON(string(b)); quiet && red.QuietInside(a.Output) {
				skipped++
			}
		}
	}
	t.Logf("%d results had a block to skip, %d a relayed value, %d left unencoded", skipped, relayed, unencoded)
	if skipped < 300 || relayed < 300 || unencoded < 100 {
		t.Errorf("only %d results had a block to skip, %d a relayed value, %d left unencoded: the test reaches too little", skipped, relayed, unencoded)
	}
}
