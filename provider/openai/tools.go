package openai

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/toolgate/toolgate/provider/internal/adapt"
	"github.com/toolgate/toolgate/schema"
	"github.com/toolgate/toolgate/tool"
)

// Tool choices (Options.ToolChoice).
const (
	ChoiceAuto     = "auto"     // the model decides (the default)
	ChoiceNone     = "none"     // the model must not call a tool
	ChoiceRequired = "required" // the model must call at least one tool
)

// Options configure a conversation (Chat or Responses).
type Options struct {
	Model  string // required
	System string // system (Chat) or instructions (Responses); "" for none
	Tools  []tool.Definition
	// Strict compiles the tools for strict mode (schema.OpenAIStrict) and
	// sends them with "strict": true, so that the model's arguments always
	// match the schema. Otherwise they go as they are (schema.OpenAI).
	Strict bool
	// ToolChoice is ChoiceAuto (or ""), ChoiceNone or ChoiceRequired.
	ToolChoice string
	// ForceTool, when set, makes the model call this tool (a named tool
	// choice); it overrides ToolChoice.
	ForceTool string
	// DisableParallel sends parallel_tool_calls: false (at most one call a
	// turn). Left false, the API's default (parallel calls) holds.
	DisableParallel bool
	// Stream asks for a streamed reply (server-sent events) whose text
	// reaches the caller as it is generated.
	Stream bool
	// MaxTokens bounds the reply's tokens; 0: the API's default.
	MaxTokens int64
}

func (o Options) provider() schema.Provider {
	if o.Strict {
		return schema.OpenAIStrict
	}
	return schema.OpenAI
}

func (o Options) check(tools *adapt.Tools) error {
	if o.Model == "" {
		return fmt.Errorf("openai: Options.Model is required")
	}
	switch o.ToolChoice {
	case "", ChoiceAuto, ChoiceNone, ChoiceRequired:
	default:
		return fmt.Errorf("openai: unknown tool choice %q (want auto, none or required, or set ForceTool)", o.ToolChoice)
	}
	if o.ForceTool != "" && !hasTool(tools, o.ForceTool) {
		return fmt.Errorf("openai: ForceTool %q is not one of the tools", o.ForceTool)
	}
	return nil
}

func hasTool(t *adapt.Tools, name string) bool {
	for _, x := range t.List {
		if x.Def.Name == name {
			return true
		}
	}
	return false
}

// ChatTools returns defs as Chat Completions' tools parameter, compiled for
// strict mode when strict is set.
func ChatTools(defs []tool.Definition, strict bool) ([]openai.ChatCompletionToolUnionParam, error) {
	p := schema.OpenAI
	if strict {
		p = schema.OpenAIStrict
	}
	t, err := adapt.Compile(p, defs)
	if err != nil {
		return nil, fmt.Errorf("openai: %w", err)
	}
	return chatTools(t, strict)
}

func chatTools(t *adapt.Tools, strict bool) ([]openai.ChatCompletionToolUnionParam, error) {
	out := make([]openai.ChatCompletionToolUnionParam, 0, len(t.List))
	for _, x := range t.List {
		params, err := adapt.ObjectSchema(x.Compiled.Schema)
		if err != nil {
			return nil, fmt.Errorf("openai: tool %s: %w", x.Def.Name, err)
		}
		fn := shared.FunctionDefinitionParam{Name: x.Wire, Parameters: params}
		if x.Def.Description != "" {
			fn.Description = openai.String(x.Def.Description)
		}
		if strict {
			fn.Strict = openai.Bool(true)
		}
		out = append(out, openai.ChatCompletionFunctionTool(fn))
	}
	return out, nil
}

// ResponsesTools returns defs as the Responses API's tools parameter. The
// API's strict flag is always sent: it defaults to true there.
func ResponsesTools(defs []tool.Definition, strict bool) ([]responses.ToolUnionParam, error) {
	p := schema.OpenAI
	if strict {
		p = schema.OpenAIStrict
	}
	t, err := adapt.Compile(p, defs)
	if err != nil {
		return nil, fmt.Errorf("openai: %w", err)
	}
	return responsesTools(t, strict)
}

func responsesTools(t *adapt.Tools, strict bool) ([]responses.ToolUnionParam, error) {
	out := make([]responses.ToolUnionParam, 0, len(t.List))
	for _, x := range t.List {
		params, err := adapt.ObjectSchema(x.Compiled.Schema)
		if err != nil {
			return nil, fmt.Errorf("openai: tool %s: %w", x.Def.Name, err)
		}
		fn := &responses.FunctionToolParam{Name: x.Wire, Parameters: params, Strict: openai.Bool(strict)}
		if x.Def.Description != "" {
			fn.Description = openai.String(x.Def.Description)
		}
		out = append(out, responses.ToolUnionParam{OfFunction: fn})
	}
	return out, nil
}

// ChatToolChoice returns Chat Completions' tool_choice for a choice
// (ChoiceAuto, ChoiceNone, ChoiceRequired) or, when force is set, the
// named tool.
func ChatToolChoice(choice, force string) openai.ChatCompletionToolChoiceOptionUnionParam {
	if force != "" {
		return openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: force})
	}
	if choice == "" {
		return openai.ChatCompletionToolChoiceOptionUnionParam{}
	}
	return openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String(choice)}
}

// ResponsesToolChoice is ChatToolChoice for the Responses API.
func ResponsesToolChoice(choice, force string) responses.ResponseNewParamsToolChoiceUnion {
	if force != "" {
		return responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: force}}
	}
	if choice == "" {
		return responses.ResponseNewParamsToolChoiceUnion{}
	}
	return responses.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: openai.Opt(responses.ToolChoiceOptions(choice))}
}

// echoArguments is what a call's arguments look like when the conversation
// goes back to the server: what the model sent when it is a JSON object,
// else {}. Servers that replay history through a chat template (Ollama,
// vLLM) refuse a request whose past arguments do not parse; the call itself
// still ran on the bytes the model sent, and its result says what was wrong.
func echoArguments(raw string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(raw), &m) == nil && m != nil {
		return raw
	}
	return "{}"
}

// apiError wraps an error of the SDK, adding the message of an API error:
// the SDK's own text gives only the status ("400 Bad Request"), and the
// message is what says which schema or parameter the API refused.
func apiError(what string, err error) error {
	var e *openai.Error
	if errors.As(err, &e) && e.Message != "" {
		return fmt.Errorf("openai: %s: %w: %s", what, err, e.Message)
	}
	return fmt.Errorf("openai: %s: %w", what, err)
}
