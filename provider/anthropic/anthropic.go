package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/toolgate/toolgate/provider/internal/adapt"
	"github.com/toolgate/toolgate/schema"
	"github.com/toolgate/toolgate/tool"
)

// Tool choices (Options.ToolChoice).
const (
	ChoiceAuto = "auto" // the model decides (the default)
	ChoiceNone = "none" // the model must not call a tool
	ChoiceAny  = "any"  // the model must call at least one tool ("required" is taken too)
)

// DefaultMaxTokens is the max_tokens sent when Options.MaxTokens is 0 (the
// API requires one).
const DefaultMaxTokens = 4096

// Options configure a conversation.
type Options struct {
	Model  string // required
	System string // "" for none
	Tools  []tool.Definition
	// ToolChoice is ChoiceAuto (or ""), ChoiceNone or ChoiceAny.
	ToolChoice string
	// ForceTool, when set, makes the model call this tool; it overrides
	// ToolChoice.
	ForceTool string
	// DisableParallel sets disable_parallel_tool_use: at most one call a
	// turn.
	DisableParallel bool
	// Stream asks for a streamed reply whose text reaches the caller as it
	// is generated.
	Stream bool
	// MaxTokens bounds the reply; 0: DefaultMaxTokens.
	MaxTokens int64
}

// Tools returns defs as the Messages API's tools parameter.
func Tools(defs []tool.Definition) ([]anthropic.ToolUnionParam, error) {
	t, err := adapt.Compile(schema.Anthropic, defs)
	if err != nil {
		return nil, fmt.Errorf("anthropic: %w", err)
	}
	return tools(t)
}

func tools(t *adapt.Tools) ([]anthropic.ToolUnionParam, error) {
	out := make([]anthropic.ToolUnionParam, 0, len(t.List))
	for _, x := range t.List {
		m, err := adapt.ObjectSchema(x.Compiled.Schema)
		if err != nil {
			return nil, fmt.Errorf("anthropic: tool %s: %w", x.Def.Name, err)
		}
		in := anthropic.ToolInputSchemaParam{Properties: m["properties"], ExtraFields: map[string]any{}}
		if raw, ok := m["required"].(json.RawMessage); ok {
			if err := json.Unmarshal(raw, &in.Required); err != nil {
				return nil, fmt.Errorf("anthropic: tool %s: required: %w", x.Def.Name, err)
			}
		}
		for k, v := range m {
			if k != "type" && k != "properties" && k != "required" {
				in.ExtraFields[k] = v
			}
		}
		p := &anthropic.ToolParam{Name: x.Wire, InputSchema: in}
		if x.Def.Description != "" {
			p.Description = anthropic.String(x.Def.Description)
		}
		out = append(out, anthropic.ToolUnionParam{OfTool: p})
	}
	return out, nil
}

// ToolChoice returns the Messages API's tool_choice: for force, the named
// tool; else for choice ChoiceAuto (""), ChoiceNone or ChoiceAny
// ("required" too). disableParallel sets disable_parallel_tool_use (not
// for none, which has no such field).
func ToolChoice(choice, force string, disableParallel bool) (anthropic.ToolChoiceUnionParam, error) {
	var dp anthropic.ToolChoiceAutoParam
	if disableParallel {
		dp.DisableParallelToolUse = anthropic.Bool(true)
	}
	switch {
	case force != "":
		return anthropic.ToolChoiceUnionParam{OfTool: &anthropic.ToolChoiceToolParam{Name: force, DisableParallelToolUse: dp.DisableParallelToolUse}}, nil
	case choice == ChoiceNone:
		return anthropic.ToolChoiceUnionParam{OfNone: &anthropic.ToolChoiceNoneParam{}}, nil
	case choice == ChoiceAny || choice == "required":
		return anthropic.ToolChoiceUnionParam{OfAny: &anthropic.ToolChoiceAnyParam{DisableParallelToolUse: dp.DisableParallelToolUse}}, nil
	case choice == "" || choice == ChoiceAuto:
		if !disableParallel {
			return anthropic.ToolChoiceUnionParam{}, nil
		}
		return anthropic.ToolChoiceUnionParam{OfAuto: &dp}, nil
	}
	return anthropic.ToolChoiceUnionParam{}, fmt.Errorf("anthropic: unknown tool choice %q (want auto, none or any, or set ForceTool)", choice)
}

// Calls returns the tool_use blocks of a message as tool.Calls with the
// names and input the model sent.
func Calls(msg anthropic.Message) []tool.Call {
	var out []tool.Call
	for _, b := range msg.Content {
		if b.Type == "tool_use" {
			out = append(out, tool.Call{ID: b.ID, Name: b.Name, Args: append(json.RawMessage(nil), b.Input...)})
		}
	}
	return out
}

// Results renders results as one user message of tool_result blocks
// answering calls (by tool_use_id, pairwise), is_error set for a failed
// call, followed by a text block for each of texts.
func Results(calls []tool.Call, results []tool.Result, texts ...string) anthropic.MessageParam {
	blocks := make([]anthropic.ContentBlockParamUnion, 0, len(calls)+len(texts))
	for i, c := range calls {
		res := tool.ErrorResult(tool.Errorf(tool.Internal, "this call was not executed").
			WithSuggestion("call the tool again if you still need its result"))
		if i < len(results) {
			res = results[i]
		}
		blocks = append(blocks, anthropic.NewToolResultBlock(c.ID, adapt.Text(res), res.IsError()))
	}
	for _, t := range texts {
		blocks = append(blocks, anthropic.NewTextBlock(t))
	}
	return anthropic.NewUserMessage(blocks...)
}

// Messages is a conversation over the Messages API. It implements
// agent.Model. It is not safe for concurrent use.
type Messages struct {
	client   anthropic.Client
	opts     Options
	tools    *adapt.Tools
	params   []anthropic.ToolUnionParam
	choice   anthropic.ToolChoiceUnionParam
	messages []anthropic.MessageParam
	pending  []tool.Call
}

// NewMessages starts a conversation with the model o.Model through client.
func NewMessages(client anthropic.Client, o Options) (*Messages, error) {
	if o.Model == "" {
		return nil, errors.New("anthropic: Options.Model is required")
	}
	t, err := adapt.Compile(schema.Anthropic, o.Tools)
	if err != nil {
		return nil, fmt.Errorf("anthropic: %w", err)
	}
	params, err := tools(t)
	if err != nil {
		return nil, err
	}
	force := ""
	if o.ForceTool != "" {
		found := false
		for _, x := range t.List {
			found = found || x.Def.Name == o.ForceTool
		}
		if !found {
			return nil, fmt.Errorf("anthropic: ForceTool %q is not one of the tools", o.ForceTool)
		}
		force = t.Wire(o.ForceTool)
	}
	choice, err := ToolChoice(o.ToolChoice, force, o.DisableParallel)
	if err != nil {
		return nil, err
	}
	return &Messages{client: client, opts: o, tools: t, params: params, choice: choice}, nil
}

// History returns the conversation so far, in the API's shape.
func (m *Messages) History() []anthropic.MessageParam { return m.messages }

// AddUser appends a user message; right after results, it joins their
// message as a text block after the tool_result blocks.
func (m *Messages) AddUser(text string) {
	if n := len(m.messages); n > 0 && m.messages[n-1].OfUser != nil {
		u := m.messages[n-1].OfUser
		u.Content = append(u.Content, anthropic.NewTextBlock(text))
		return
	}
	m.messages = append(m.messages, anthropic.NewUserMessage(anthropic.NewTextBlock(text)))
}

// Params returns the request Next sends for the conversation so far.
func (m *Messages) Params() anthropic.MessageNewParams {
	p := anthropic.MessageNewParams{Model: m.opts.Model, Messages: m.messages, MaxTokens: m.opts.MaxTokens}
	if p.MaxTokens <= 0 {
		p.MaxTokens = DefaultMaxTokens
	}
	if m.opts.System != "" {
		p.System = []anthropic.TextBlockParam{{Text: m.opts.System}}
	}
	if len(m.params) > 0 {
		p.Tools = m.params
		p.ToolChoice = m.choice
	}
	return p
}

// Next asks the model and returns the calls of its reply (see agent.Model).
func (m *Messages) Next(ctx context.Context, text func(string)) ([]tool.Call, error) {
	if len(m.pending) > 0 {
		return nil, errors.New("anthropic: the results of the last reply's calls were not added")
	}
	var msg anthropic.Message
	raw := map[int][]byte{} // streamed input of tool_use blocks, by index
	if m.opts.Stream {
		s := m.client.Messages.NewStreaming(ctx, m.Params())
		for s.Next() {
			ev := s.Current()
			if err := msg.Accumulate(ev); err != nil {
				s.Close()
				return nil, fmt.Errorf("anthropic: stream: %w", err)
			}
			if ev.Type == "content_block_delta" {
				switch ev.Delta.Type {
				case "text_delta":
					if text != nil && ev.Delta.Text != "" {
						text(ev.Delta.Text)
					}
				case "input_json_delta":
					i := int(ev.Index)
					raw[i] = append(raw[i], ev.Delta.PartialJSON...)
				}
			}
		}
		err := s.Err()
		s.Close()
		if err != nil {
			return nil, fmt.Errorf("anthropic: message stream: %w", err)
		}
	} else {
		resp, err := m.client.Messages.New(ctx, m.Params())
		if err != nil {
			return nil, fmt.Errorf("anthropic: message: %w", err)
		}
		msg = *resp
		for _, b := range msg.Content {
			if b.Type == "text" && text != nil && b.Text != "" {
				text(b.Text)
			}
		}
	}
	asst := msg.ToParam()
	var calls []tool.Call
	for i, b := range msg.Content {
		if b.Type != "tool_use" {
			continue
		}
		input := []byte(b.Input)
		if r, ok := raw[i]; ok {
			input = r
		}
		calls = append(calls, m.tools.Call(b.ID, b.Name, input))
		// The API reads back only an object as a tool_use's input; the
		// call itself ran on what the model sent.
		if pu := asst.OfAssistant.Content[i].OfToolUse; pu != nil && !isObject(input) {
			pu.Input = json.RawMessage(`{}`)
		}
	}
	if len(asst.OfAssistant.Content) > 0 {
		m.messages = append(m.messages, asst)
	}
	m.pending = calls
	return calls, nil
}

func isObject(b []byte) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(b, &m) == nil && m != nil
}

// AddResults appends one user message of tool_result blocks for the last
// reply's calls.
func (m *Messages) AddResults(results []tool.Result) {
	if len(m.pending) == 0 {
		return
	}
	m.messages = append(m.messages, Results(m.pending, results))
	m.pending = nil
}
