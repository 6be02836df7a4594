package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/toolgate/toolgate/provider/internal/adapt"
	"github.com/toolgate/toolgate/schema"
)

// Format is a JSON Schema a reply must match, compiled for strict mode.
type Format struct {
	adapt.Format // Name, and the schema compiled and as written
}

// NewFormat compiles sch (a JSON Schema of an object) for a structured
// reply named name.
func NewFormat(name string, sch json.RawMessage) (*Format, error) {
	f, err := adapt.NewFormat(schema.OpenAIStrict, name, sch)
	if err != nil {
		return nil, fmt.Errorf("openai: %w", err)
	}
	return &Format{f}, nil
}

// Chat returns Chat Completions' response_format: json_schema, strict.
func (f *Format) Chat() (openai.ChatCompletionNewParamsResponseFormatUnion, error) {
	m, err := adapt.ObjectSchema(f.Compiled.Schema)
	if err != nil {
		return openai.ChatCompletionNewParamsResponseFormatUnion{}, err
	}
	return openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
		JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: f.Name, Schema: m, Strict: openai.Bool(true)},
	}}, nil
}

// Responses returns the Responses API's text format: json_schema, strict.
func (f *Format) Responses() (responses.ResponseTextConfigParam, error) {
	m, err := adapt.ObjectSchema(f.Compiled.Schema)
	if err != nil {
		return responses.ResponseTextConfigParam{}, err
	}
	return responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{
		OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{Name: f.Name, Schema: m, Strict: openai.Bool(true)},
	}}, nil
}

// Parse checks a reply's text against the format: one JSON object that,
// once the nulls strict mode forced are removed, validates against the
// schema. The error lists every failing field.
func (f *Format) Parse(text string) (map[string]any, error) {
	v, err := adapt.Structured(f.Name, f.Compiled, f.Check, text)
	if err != nil {
		return nil, fmt.Errorf("openai: %w", err)
	}
	return v, nil
}

// ChatStructured sends params with f as its response format and returns
// the reply, validated (see Format.Parse). A refusal is an error quoting it.
func ChatStructured(ctx context.Context, client openai.Client, params openai.ChatCompletionNewParams, f *Format) (map[string]any, error) {
	rf, err := f.Chat()
	if err != nil {
		return nil, err
	}
	params.ResponseFormat = rf
	resp, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		return nil, apiError("chat completion", err)
	}
	if len(resp.Choices) == 0 {
		return nil, errors.New("openai: the chat completion has no choices")
	}
	msg := resp.Choices[0].Message
	if msg.Refusal != "" {
		return nil, fmt.Errorf("openai: the model refused: %s", msg.Refusal)
	}
	return f.Parse(msg.Content)
}

// ResponsesStructured sends params with f as its text format and returns
// the reply, validated (see Format.Parse).
func ResponsesStructured(ctx context.Context, client openai.Client, params responses.ResponseNewParams, f *Format) (map[string]any, error) {
	tf, err := f.Responses()
	if err != nil {
		return nil, err
	}
	params.Text = tf
	resp, err := client.Responses.New(ctx, params)
	if err != nil {
		return nil, apiError("response", err)
	}
	if err := responseError(resp); err != nil {
		return nil, fmt.Errorf("openai: %w", err)
	}
	for _, item := range resp.Output {
		for _, c := range item.Content {
			if c.Type == "refusal" {
				return nil, fmt.Errorf("openai: the model refused: %s", c.Refusal)
			}
		}
	}
	return f.Parse(outputText(resp.Output))
}
