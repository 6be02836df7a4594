package trust

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/tool"
)

// flatAnswer has the shape of a process tool's answer (exec.ProcessAnswer):
// a flat struct, which an MCP server's call reads through tool.JSONValue.
type flatAnswer struct {
	ID       string  `json:"id,omitempty"`
	State    string  `json:"state"`
	ExitCode *int    `json:"exit_code,omitempty"`
	Output   string  `json:"output"`
	Cursor   int64   `json:"cursor"`
	Name     *string `json:"name"`
	More     bool    `json:"more,omitempty"`
}

// anyBoundary is a marker's id, which each marking draws anew.
var anyBoundary = regexp.MustCompile(`id=\\?"[0-9a-f]{16}\\?"`)

// TestCheckResultFlatValue: in an MCP server's call (tool.WithEncoded) the
// check reads a flat structured value as tool.JSONValue gives it, without
// decoding its bytes; it finds, marks and withholds exactly what it does
// reading the bytes (a context without WithEncoded), on random answers of
// plain, adversarial and injected text, in the text blocks or not.
func TestCheckResultFlatValue(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 8))
	strs := []string{"", "running", "exited", strings.Repeat("1234567\n", 1024),
		"<b>&\"\\ \u2028\u2029 \xff\xfe \xed\xa0\x80 é😀 \x00\x1f\x7f", "pass\u200bword", "untrusted content [toolgate: x]"}
	for _, c := range injections {
		strs = append(strs, c.text)
	}
	str := func() string {
		s := strs[r.IntN(len(strs))]
		if r.IntN(3) == 0 {
			s += "\n" + strs[r.IntN(len(strs))]
		}
		return s
	}
	flagged := 0
	for range 600 {
		code, name := r.IntN(256), str()
		a := flatAnswer{ID: str(), State: str(), Output: str(), Cursor: r.Int64(), More: r.IntN(2) == 0}
		if r.IntN(2) == 0 {
			a.ExitCode, a.Name = &code, &name
		}
		res := tool.Result{Content: []tool.Content{tool.TextContent(a.State)}, Structured: a}
		if r.IntN(2) == 0 {
			res.Content = append(res.Content, tool.TextContent(a.Output))
		}
		if r.IntN(4) == 0 {
			res.Structured = &a
		}
		for _, mode := range []ResultMode{ResultsMark, ResultsBlock} {
			ctx := tool.WithEncoded(context.Background())
			if _, ok := tool.JSONValue(ctx, res.Structured); !ok {
				t.Fatalf("%#v: not read through JSONValue", res.Structured)
			}
			got, gotFound := applyResult(ctx, mode, "", "read_process", res)
			want, wantFound := applyResult(context.Background(), mode, "", "read_process", res)
			if !reflect.DeepEqual(gotFound, wantFound) {
				t.Fatalf("%#v: found %v, reading the bytes %v", a, gotFound, wantFound)
			}
			g, err1 := json.Marshal(got)
			w, err2 := json.Marshal(want)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if gs, ws := anyBoundary.ReplaceAllString(string(g), "id"), anyBoundary.ReplaceAllString(string(w), "id"); gs != ws {
				t.Fatalf("%#v:\n got %.600s\nwant %.600s", a, gs, ws)
			}
			if len(gotFound) > 0 {
				flagged++
			}
		}
	}
	if flagged < 100 {
		t.Errorf("only %d of 1200 results flagged: the injected texts are not reaching the check", flagged)
	}
}
