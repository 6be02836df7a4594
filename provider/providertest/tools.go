package providertest

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"

	"github.com/toolgate/toolgate/tool"
)

// Received is one run of a tool of Tools: the arguments it was given,
// after the engine's parsing and validation.
type Received struct {
	Tool string
	Args json.RawMessage
}

// Log records the runs of the tools of Tools. It is safe for concurrent use.
type Log struct {
	mu   sync.Mutex
	runs []Received
}

// Runs returns the runs so far, in the order they happened.
func (l *Log) Runs() []Received {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Received(nil), l.runs...)
}

func (l *Log) add(name string, args json.RawMessage) {
	l.mu.Lock()
	l.runs = append(l.runs, Received{name, append(json.RawMessage(nil), args...)})
	l.mu.Unlock()
}

// Tools returns read-level tools for scripted runs, and the log of their
// runs:
//
//	add     {a: integer, b: integer} both required → "a+b"
//	fail    {id: string} required → always a not_found error
//	finish  {answer: string} required → "done"
//	note    {text: string} required, {tag: string} optional → the arguments it got
func Tools() ([]tool.Tool, *Log) {
	log := &Log{}
	def := func(name, desc, sch string) tool.Definition {
		return tool.Definition{Name: name, Description: desc, InputSchema: json.RawMessage(sch),
			Annotations: tool.Annotations{ReadOnly: true, Idempotent: true}, Level: tool.LevelRead}
	}
	add := tool.Func(def("add", "Add two integers. Use it for any sum.",
		`{"type":"object","properties":{"a":{"type":"integer","description":"first addend"},"b":{"type":"integer","description":"second addend"}},"required":["a","b"],"additionalProperties":false}`),
		func(ctx context.Context, c tool.Call) (tool.Result, error) {
			log.add("add", c.Args)
			var in struct{ A, B int64 }
			if err := json.Unmarshal(c.Args, &in); err != nil {
				return tool.Result{}, err
			}
			return tool.TextResult(strconv.FormatInt(in.A+in.B, 10)), nil
		})
	fail := tool.Func(def("fail", "Look up a record by ID. Fails for every ID.",
		`{"type":"object","properties":{"id":{"type":"string","description":"record ID"}},"required":["id"]}`),
		func(ctx context.Context, c tool.Call) (tool.Result, error) {
			log.add("fail", c.Args)
			return tool.Result{}, tool.Errorf(tool.NotFound, "no record has that ID").WithSuggestion("list the records first")
		})
	finish := tool.Func(def("finish", "Give the final answer and end the task.",
		`{"type":"object","properties":{"answer":{"type":"string","description":"the answer"}},"required":["answer"]}`),
		func(ctx context.Context, c tool.Call) (tool.Result, error) {
			log.add("finish", c.Args)
			return tool.TextResult("done"), nil
		})
	note := tool.Func(def("note", "Write a note with an optional tag.",
		`{"type":"object","properties":{"text":{"type":"string","description":"the note"},"tag":{"type":"string","description":"a tag"}},"required":["text"]}`),
		func(ctx context.Context, c tool.Call) (tool.Result, error) {
			log.add("note", c.Args)
			return tool.TextResult(string(c.Args)), nil
		})
	return []tool.Tool{add, fail, finish, note}, log
}
