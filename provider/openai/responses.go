package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolgate/toolgate/provider/internal/adapt"
	"github.com/toolgate/toolgate/tool"
)

// Responses is a conversation over the Responses API. It keeps the whole
// conversation and sends it every time (each output item of the model
// goes back as an input item, as the API documents for stateless use), so
// it works with store off and with servers that keep no state. It
// implements agent.Model. It is not safe for concurrent use.
type Responses struct {
	client  openai.Client
	opts    Options
	tools   *adapt.Tools
	params  []responses.ToolUnionParam
	input   responses.ResponseInputParam
	pending []tool.Call
}

// NewResponses starts a conversation with the model o.Model through client.
func NewResponses(client openai.Client, o Options) (*Responses, error) {
	t, err := adapt.Compile(o.provider(), o.Tools)
	if err != nil {
		return nil, fmt.Errorf("openai: %w", err)
	}
	if err := o.check(t); err != nil {
		return nil, err
	}
	params, err := responsesTools(t, o.Strict)
	if err != nil {
		return nil, err
	}
	return &Responses{client: client, opts: o, tools: t, params: params}, nil
}

// Input returns the conversation so far, as the API's input items.
func (r *Responses) Input() responses.ResponseInputParam { return r.input }

// AddUser appends a user message.
func (r *Responses) AddUser(text string) {
	r.input = append(r.input, responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleUser))
}

// Params returns the request Next sends for the conversation so far.
func (r *Responses) Params() responses.ResponseNewParams {
	p := responses.ResponseNewParams{
		Model: r.opts.Model,
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: r.input},
	}
	if r.opts.System != "" {
		p.Instructions = openai.String(r.opts.System)
	}
	if len(r.params) > 0 {
		p.Tools = r.params
		force := ""
		if r.opts.ForceTool != "" {
			force = r.tools.Wire(r.opts.ForceTool)
		}
		p.ToolChoice = ResponsesToolChoice(r.opts.ToolChoice, force)
		if r.opts.DisableParallel {
			p.ParallelToolCalls = openai.Bool(false)
		}
	}
	if r.opts.MaxTokens > 0 {
		p.MaxOutputTokens = openai.Int(r.opts.MaxTokens)
	}
	return p
}

// Next asks the model and returns the calls of its reply (see agent.Model).
func (r *Responses) Next(ctx context.Context, text func(string)) ([]tool.Call, error) {
	if len(r.pending) > 0 {
		return nil, errors.New("openai: the results of the last reply's calls were not added")
	}
	var output []responses.ResponseOutputItemUnion
	var err error
	if r.opts.Stream {
		output, err = r.stream(ctx, text)
	} else {
		var resp *responses.Response
		resp, err = r.client.Responses.New(ctx, r.Params())
		if err == nil {
			err = responseError(resp)
		}
		if err == nil {
			output = resp.Output
			if t := outputText(output); t != "" && text != nil {
				text(t)
			}
		}
	}
	if err != nil {
		return nil, apiError("response", err)
	}
	var calls []tool.Call
	for _, item := range output {
		raw := item.RawJSON()
		if item.Type == "function_call" {
			fc := item.AsFunctionCall()
			calls = append(calls, r.tools.Call(fc.CallID, fc.Name, []byte(fc.Arguments)))
			if echo := echoArguments(fc.Arguments); echo != fc.Arguments {
				// Keep the item as the server sent it but for arguments
				// the server would refuse to read back.
				raw = string(replaceArguments(raw, echo))
			}
		}
		if raw == "" {
			continue
		}
		r.input = append(r.input, param.Override[responses.ResponseInputItemUnionParam](json.RawMessage(raw)))
	}
	r.pending = calls
	return calls, nil
}

// AddResults appends one function_call_output item per call of the last
// reply.
func (r *Responses) AddResults(results []tool.Result) {
	r.input = append(r.input, ResponsesResults(r.pending, results)...)
	r.pending = nil
}

// ResponsesCalls returns the function_call items of a response's output as
// tool.Calls (ID = call_id) with the names and arguments the model sent.
func ResponsesCalls(output []responses.ResponseOutputItemUnion) []tool.Call {
	var out []tool.Call
	for _, item := range output {
		if item.Type == "function_call" {
			fc := item.AsFunctionCall()
			out = append(out, tool.Call{ID: fc.CallID, Name: fc.Name, Args: []byte(fc.Arguments)})
		}
	}
	return out
}

// ResponsesResults renders results as function_call_output items answering
// calls (by call_id, pairwise). A failed call's output is its error's
// model-facing text.
func ResponsesResults(calls []tool.Call, results []tool.Result) []responses.ResponseInputItemUnionParam {
	out := make([]responses.ResponseInputItemUnionParam, 0, len(calls))
	for i, call := range calls {
		item := responses.ResponseInputItemParamOfFunctionCallOutput(adapt.Text(missing(i, results)))
		item.OfFunctionCallOutput.CallID = openai.String(call.ID)
		out = append(out, item)
	}
	return out
}

func replaceArguments(raw, args string) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(raw), &m) != nil {
		return []byte(raw)
	}
	m["arguments"], _ = json.Marshal(args)
	b, err := json.Marshal(m)
	if err != nil {
		return []byte(raw)
	}
	return b
}

// responseError reports a response that did not complete.
func responseError(resp *responses.Response) error {
	switch resp.Status {
	case "failed":
		return fmt.Errorf("the response failed: %s: %s", resp.Error.Code, resp.Error.Message)
	case "cancelled":
		return errors.New("the response was cancelled")
	}
	return nil
}

func outputText(output []responses.ResponseOutputItemUnion) string {
	var s string
	for _, item := range output {
		if item.Type != "message" {
			continue
		}
		for _, c := range item.Content {
			if c.Type == "output_text" {
				s += c.Text
			}
		}
	}
	return s
}

// stream reads a streamed response: text deltas as they come, the output
// items from response.completed (or, when a server sends none there, from
// each response.output_item.done).
func (r *Responses) stream(ctx context.Context, text func(string)) ([]responses.ResponseOutputItemUnion, error) {
	s := r.client.Responses.NewStreaming(ctx, r.Params())
	defer s.Close()
	var done []responses.ResponseOutputItemUnion
	var final *responses.Response
	for s.Next() {
		ev := s.Current()
		switch ev.Type {
		case "response.output_text.delta":
			if text != nil && ev.Delta != "" {
				text(ev.Delta)
			}
		case "response.output_item.done":
			done = append(done, ev.Item)
		case "response.completed", "response.incomplete":
			resp := ev.Response
			final = &resp
		case "response.failed":
			resp := ev.Response
			resp.Status = "failed"
			return nil, responseError(&resp)
		case "error":
			return nil, fmt.Errorf("stream error %s: %s", ev.Code, ev.Message)
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if final == nil {
		return nil, errors.New("the stream ended before response.completed")
	}
	if len(final.Output) > 0 {
		return final.Output, nil
	}
	return done, nil
}
