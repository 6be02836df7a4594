package engine

import (
	"context"
	"encoding/json"
	"fmt"
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

// relayedBlocks is a relayed result of n text blocks, each a line of
// 72 bytes, and the structured value {"items": [those n lines]}, as
// an upstream that repeats its text as structuredContent sends it (each
// line too long for MayMatchJSON to search by itself: quiet as a block); the
// line at secretAt (if any) holds an AWS key in the value, and also in
// its block when inBlock.
func relayedBlocks(tb testing.TB, n, secretAt int, inBlock bool) tool.Result {
	lines := make([]string, n)
	items := make([]any, n)
	var res tool.Result
	for i := range n {
		lines[i] = fmt.Sprintf("entry %06d of a long listing that an upstream relays, each line alike\n", i)
		items[i] = lines[i]
		if i == secretAt {
			items[i] = lines[i] + "AKIAIOSFODNN7EXAMPLE"
			if inBlock {
				lines[i] = items[i].(string)
			}
		}
		res.Content = append(res.Content, tool.TextContent(lines[i]))
	}
	res.Structured = map[string]any{"items": items}
	raw, err := json.Marshal(res.Structured)
	if err != nil {
		tb.Fatal(err)
	}
	res.Relay = tool.NewRelay([]byte("{}"), raw, res)
	if _, ok := res.Relay.StructuredFor(res.Structured); !ok {
		tb.Fatal("the result is not relayed")
	}
	return res
}

// TestRedactRelayManyBlocks: a relayed result of 20,000 text blocks whose
// value repeats each (the quiet texts are many, so looked up by a map) is
// redacted exactly as by reading everything: quiet, it is left as it is
// without encoding the value; with a secret in the value's last string
// only, or in the last block too, each is replaced. Before the map this
// took 20,000² string compares (seconds; REVIEW13 F1);
// BenchmarkRedactRelayManyBlocks shows the cost grows with n, not n².
func TestRedactRelayManyBlocks(t *testing.T) {
	red, err := policy.NewRedactor(policy.DefaultSecrets())
	if err != nil {
		t.Fatal(err)
	}
	e := New(Options{Redactor: red})
	const n = 20000
	for _, c := range []struct {
		name     string
		secretAt int
		inBlock  bool
		want     int
	}{
		{"quiet", -1, false, 0},
		{"secret-in-value", n - 1, false, 1},
		{"secret-in-value-and-block", n - 1, true, 2},
	} {
		res := relayedBlocks(t, n, c.secretAt, c.inBlock)
		raw, _ := res.Relay.StructuredFor(res.Structured)
		var quiet []string
		for _, b := range res.Content {
			if red.Quiet(b.Text) {
				quiet = append(quiet, b.Text)
			}
		}
		if may := red.MayMatchJSON(raw, res.Structured, quiet); may != (c.secretAt >= 0) {
			t.Errorf("%s: MayMatchJSON = %v with %d quiet texts", c.name, may, len(quiet))
		}
		got := e.redact(context.Background(), res)
		if want := redactBefore(context.Background(), e, res); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: the redaction differs from reading everything", c.name)
		}
		if k, _ := got.Meta["redacted"].(int); k != c.want {
			t.Errorf("%s: %d redacted, want %d", c.name, k, c.want)
		}
	}
}

// BenchmarkRedactRelayManyBlocks redacts a quiet relayed result of n text
// blocks whose value repeats each: the cost per block stays the same as n
// grows (it grew with n when each string was compared with every block).
func BenchmarkRedactRelayManyBlocks(b *testing.B) {
	red, err := policy.NewRedactor(policy.DefaultSecrets())
	if err != nil {
		b.Fatal(err)
	}
	e := New(Options{Redactor: red})
	for _, n := range []int{1, 1000, 4000, 16000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			res := relayedBlocks(b, n, -1, false)
			b.ReportAllocs()
			for b.Loop() {
				e.redact(context.Background(), res)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/block")
		})
	}
}
