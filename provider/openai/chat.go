package openai

import (
	"context"
	"errors"
	"fmt"

	"github.com/openai/openai-go/v3"

	"github.com/toolgate/toolgate/provider/internal/adapt"
	"github.com/toolgate/toolgate/tool"
)

// Chat is a conversation over the Chat Completions API. It implements
// agent.Model. It is not safe for concurrent use.
type Chat struct {
	client   openai.Client
	opts     Options
	tools    *adapt.Tools
	params   []openai.ChatCompletionToolUnionParam
	messages []openai.ChatCompletionMessageParamUnion
	pending  []tool.Call // the last reply's calls, awaiting results
}

// NewChat starts a conversation with the model o.Model through client.
func NewChat(client openai.Client, o Options) (*Chat, error) {
	t, err := adapt.Compile(o.provider(), o.Tools)
	if err != nil {
		return nil, fmt.Errorf("openai: %w", err)
	}
	if err := o.check(t); err != nil {
		return nil, err
	}
	params, err := chatTools(t, o.Strict)
	if err != nil {
		return nil, err
	}
	c := &Chat{client: client, opts: o, tools: t, params: params}
	if o.System != "" {
		c.messages = append(c.messages, openai.SystemMessage(o.System))
	}
	return c, nil
}

// Messages returns the conversation so far, in the API's shape.
func (c *Chat) Messages() []openai.ChatCompletionMessageParamUnion { return c.messages }

// AddUser appends a user message.
func (c *Chat) AddUser(text string) { c.messages = append(c.messages, openai.UserMessage(text)) }

// Params returns the request Next sends for the conversation so far.
func (c *Chat) Params() openai.ChatCompletionNewParams {
	p := openai.ChatCompletionNewParams{Model: c.opts.Model, Messages: c.messages}
	if len(c.params) > 0 {
		p.Tools = c.params
		p.ToolChoice = ChatToolChoice(c.opts.ToolChoice, c.force())
		if c.opts.DisableParallel {
			p.ParallelToolCalls = openai.Bool(false)
		}
	}
	if c.opts.MaxTokens > 0 {
		p.MaxCompletionTokens = openai.Int(c.opts.MaxTokens)
	}
	return p
}

// force is the wire name of the tool the model must call, or "".
func (c *Chat) force() string {
	if c.opts.ForceTool == "" {
		return ""
	}
	return c.tools.Wire(c.opts.ForceTool)
}

// Next asks the model and returns the calls of its reply (see agent.Model).
func (c *Chat) Next(ctx context.Context, text func(string)) ([]tool.Call, error) {
	if len(c.pending) > 0 {
		return nil, errors.New("openai: the results of the last reply's calls were not added")
	}
	var msg chatReply
	var err error
	if c.opts.Stream {
		msg, err = c.stream(ctx, text)
	} else {
		msg, err = c.complete(ctx, text)
	}
	if err != nil {
		return nil, err
	}
	asst := openai.ChatCompletionAssistantMessageParam{}
	if msg.content != "" {
		asst.Content.OfString = openai.String(msg.content)
	}
	calls := make([]tool.Call, 0, len(msg.calls))
	for _, tc := range msg.calls {
		asst.ToolCalls = append(asst.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
				ID:       tc.id,
				Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.name, Arguments: echoArguments(tc.args)},
			},
		})
		calls = append(calls, c.tools.Call(tc.id, tc.name, []byte(tc.args)))
	}
	if msg.content == "" && len(calls) == 0 && msg.refusal != "" {
		asst.Refusal = openai.String(msg.refusal)
	}
	c.messages = append(c.messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &asst})
	c.pending = calls
	return calls, nil
}

// AddResults appends one "tool" message per call of the last reply.
func (c *Chat) AddResults(results []tool.Result) {
	c.messages = append(c.messages, ChatResults(c.pending, results)...)
	c.pending = nil
}

// ChatResults renders results as "tool" role messages answering calls (by
// ID, pairwise). A failed call's message is its error's model-facing text.
func ChatResults(calls []tool.Call, results []tool.Result) []openai.ChatCompletionMessageParamUnion {
	out := make([]openai.ChatCompletionMessageParamUnion, 0, len(calls))
	for i, call := range calls {
		res := missing(i, results)
		out = append(out, openai.ToolMessage(adapt.Text(res), call.ID))
	}
	return out
}

// missing returns results[i], or an error result when the caller gave
// fewer results than calls: every call ID must be answered.
func missing(i int, results []tool.Result) tool.Result {
	if i < len(results) {
		return results[i]
	}
	return tool.ErrorResult(tool.Errorf(tool.Internal, "this call was not executed").
		WithSuggestion("call the tool again if you still need its result"))
}

// ChatCalls returns the tool calls of a Chat Completions message as
// tool.Calls with the names and arguments the model sent, unmapped (the
// Chat conversation maps them back to the tools' own shapes).
func ChatCalls(msg openai.ChatCompletionMessage) []tool.Call {
	var out []tool.Call
	for _, tc := range msg.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue
		}
		out = append(out, tool.Call{ID: tc.ID, Name: tc.Function.Name, Args: []byte(tc.Function.Arguments)})
	}
	return out
}

type chatCall struct{ id, name, args string }

type chatReply struct {
	content, refusal, finish string
	calls                    []chatCall
}

func (c *Chat) complete(ctx context.Context, text func(string)) (chatReply, error) {
	resp, err := c.client.Chat.Completions.New(ctx, c.Params())
	if err != nil {
		return chatReply{}, apiError("chat completion", err)
	}
	if len(resp.Choices) == 0 {
		return chatReply{}, errors.New("openai: the chat completion has no choices")
	}
	ch := resp.Choices[0]
	r := chatReply{content: ch.Message.Content, refusal: ch.Message.Refusal, finish: ch.FinishReason}
	if r.content != "" && text != nil {
		text(r.content)
	}
	for _, tc := range ChatCalls(ch.Message) {
		r.calls = append(r.calls, chatCall{tc.ID, tc.Name, string(tc.Args)})
	}
	return r, nil
}

// stream reads a streamed reply. Tool calls arrive as deltas keyed by
// index: the first carries the ID and name, later ones pieces of the
// arguments, concatenated as received. Some OpenAI-compatible servers send
// every call with index 0; a delta with a new ID then starts a new call.
func (c *Chat) stream(ctx context.Context, text func(string)) (chatReply, error) {
	s := c.client.Chat.Completions.NewStreaming(ctx, c.Params())
	defer s.Close()
	var r chatReply
	byIndex := map[int64]int{} // delta index → position in r.calls
	for s.Next() {
		chunk := s.Current()
		if len(chunk.Choices) == 0 {
			continue
		}
		ch := chunk.Choices[0]
		if d := ch.Delta.Content; d != "" {
			r.content += d
			if text != nil {
				text(d)
			}
		}
		r.refusal += ch.Delta.Refusal
		for _, d := range ch.Delta.ToolCalls {
			pos, seen := byIndex[d.Index]
			if !seen || (d.ID != "" && r.calls[pos].id != "" && d.ID != r.calls[pos].id) {
				r.calls = append(r.calls, chatCall{})
				pos = len(r.calls) - 1
				byIndex[d.Index] = pos
			}
			cc := &r.calls[pos]
			if d.ID != "" {
				cc.id = d.ID
			}
			// OpenAI sends the name once; some compatible servers send it
			// in pieces, others whole in every delta.
			if n := d.Function.Name; n != "" && n != cc.name {
				cc.name += n
			}
			cc.args += d.Function.Arguments
		}
		if ch.FinishReason != "" {
			r.finish = ch.FinishReason
		}
	}
	if err := s.Err(); err != nil {
		return chatReply{}, apiError("chat completion stream", err)
	}
	for i := range r.calls {
		if r.calls[i].id == "" {
			r.calls[i].id = fmt.Sprintf("call_%d", i)
		}
	}
	return r, nil
}
