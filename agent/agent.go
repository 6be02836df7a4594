package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/tool"
)

// Model is one conversation with a model API. The provider adapters
// implement it.
type Model interface {
	// AddUser appends a user message to the conversation.
	AddUser(text string)
	// Next sends the conversation to the model and returns the tool calls
	// of its reply, none when it answered. The reply's text goes to text as
	// it arrives, and the reply joins the conversation.
	Next(ctx context.Context, text func(string)) ([]tool.Call, error)
	// AddResults appends the results of the last reply's calls, in the
	// order Next returned the calls.
	AddResults(results []tool.Result)
}

// Executor runs a turn's calls; *engine.Engine is one.
type Executor interface {
	ExecuteAll(ctx context.Context, calls []tool.Call) []tool.Result
}

// Options configure Run. Executor is required.
type Options struct {
	Executor Executor
	// MaxIterations bounds how many times the model is asked; 0: 10.
	MaxIterations int
	// StopAt names tools whose successful call ends the run once the
	// turn's calls have run (a "final_answer" or "submit" tool, say); a
	// failed one goes back to the model like any other error.
	StopAt []string
	// Text receives the assistant's text as it streams; nil discards it.
	Text io.Writer
	// OnCall, when set, sees every call and its result after it ran.
	OnCall func(call tool.Call, result tool.Result)
	// Principal and Session are set on every call that has none.
	Principal, Session string
}

// Stop says why a run ended.
type Stop string

// The ways a run ends.
const (
	StopAnswered      Stop = "answered"       // the model replied without calling a tool
	StopTool          Stop = "stop_tool"      // the model called a tool named in Options.StopAt
	StopMaxIterations Stop = "max_iterations" // the model was still calling tools at the limit
)

// ErrMaxIterations is wrapped by Run's error when the model was still
// calling tools after Options.MaxIterations requests.
var ErrMaxIterations = errors.New("maximum iterations reached")

// Outcome is what a run did.
type Outcome struct {
	Stop       Stop
	StopTool   string // the stop-at tool that ended the run
	Answer     string // the text of the model's last reply
	Iterations int    // requests to the model
	Calls      int    // tool calls executed
	Failed     int    // of which returned an error
}

// Run gives the model task and runs the loop until it ends (see Stop). A
// failure of the model API or a cancelled ctx ends it with an error; a
// failing tool does not: its error goes back to the model. At the
// iteration limit the last turn's calls have run and their results are in
// the conversation; the error wraps ErrMaxIterations and says what the
// model was still doing.
func Run(ctx context.Context, m Model, task string, o Options) (Outcome, error) {
	if o.Executor == nil {
		return Outcome{}, errors.New("agent: Options.Executor is required")
	}
	max := o.MaxIterations
	if max <= 0 {
		max = 10
	}
	var out Outcome
	var last []string // names of the last turn's calls
	m.AddUser(task)
	for out.Iterations < max {
		if err := ctx.Err(); err != nil {
			return out, fmt.Errorf("agent: %w", err)
		}
		out.Iterations++
		var answer strings.Builder
		calls, err := m.Next(ctx, func(s string) {
			answer.WriteString(s)
			if o.Text != nil {
				io.WriteString(o.Text, s)
			}
		})
		out.Answer = answer.String()
		if err != nil {
			return out, fmt.Errorf("agent: iteration %d: %w", out.Iterations, err)
		}
		if len(calls) == 0 {
			out.Stop = StopAnswered
			return out, nil
		}
		for i := range calls {
			if calls[i].Principal == "" {
				calls[i].Principal = o.Principal
			}
			if calls[i].Session == "" {
				calls[i].Session = o.Session
			}
		}
		last = last[:0]
		for _, c := range calls {
			last = append(last, c.Name)
		}
		results := o.Executor.ExecuteAll(ctx, calls)
		m.AddResults(results)
		for i, c := range calls {
			out.Calls++
			if results[i].IsError() {
				out.Failed++
			}
			if o.OnCall != nil {
				o.OnCall(c, results[i])
			}
			if out.StopTool == "" && slices.Contains(o.StopAt, c.Name) && !results[i].IsError() {
				out.StopTool = c.Name
			}
		}
		if out.StopTool != "" {
			out.Stop = StopTool
			return out, nil
		}
		if err := ctx.Err(); err != nil {
			return out, fmt.Errorf("agent: %w", err)
		}
	}
	out.Stop = StopMaxIterations
	return out, fmt.Errorf("agent: %w: the model was still calling tools after %d requests (last: %s); raise the limit or narrow the task",
		ErrMaxIterations, max, strings.Join(last, ", "))
}
