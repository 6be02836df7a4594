package anthropic

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/toolgate/toolgate/provider/internal/adapt"
	"github.com/toolgate/toolgate/schema"
)

// Format is a JSON Schema a reply must match, sent as the Messages API's
// output_config.format (type json_schema).
type Format struct {
	adapt.Format // Name, and the schema compiled and as written
}

// NewFormat compiles sch (a JSON Schema of an object) for a structured
// reply named name (the name appears in errors).
func NewFormat(name string, sch json.RawMessage) (*Format, error) {
	f, err := adapt.NewFormat(schema.Anthropic, name, sch)
	if err != nil {
		return nil, fmt.Errorf("anthropic: %w", err)
	}
	return &Format{f}, nil
}

// OutputConfig returns output_config with f as its format.
func (f *Format) OutputConfig() (anthropic.OutputConfigParam, error) {
	m, err := adapt.ObjectSchema(f.Compiled.Schema)
	if err != nil {
		return anthropic.OutputConfigParam{}, err
	}
	return anthropic.OutputConfigParam{Format: anthropic.JSONOutputFormatParam{Schema: m}}, nil
}

// Parse checks a reply's text: one JSON object valid against the schema.
// The error lists every failing field.
func (f *Format) Parse(text string) (map[string]any, error) {
	v, err := adapt.Structured(f.Name, f.Compiled, f.Check, text)
	if err != nil {
		return nil, fmt.Errorf("anthropic: %w", err)
	}
	return v, nil
}

// Structured sends params with f as its output format and returns the
// reply's text, validated (see Format.Parse).
func Structured(ctx context.Context, client anthropic.Client, params anthropic.MessageNewParams, f *Format) (map[string]any, error) {
	oc, err := f.OutputConfig()
	if err != nil {
		return nil, err
	}
	params.OutputConfig = oc
	if params.MaxTokens <= 0 {
		params.MaxTokens = DefaultMaxTokens
	}
	msg, err := client.Messages.New(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("anthropic: message: %w", err)
	}
	if msg.StopReason == "refusal" {
		return nil, fmt.Errorf("anthropic: the model refused")
	}
	var text string
	for _, b := range msg.Content {
		if b.Type == "text" {
			text += b.Text
		}
	}
	return f.Parse(text)
}
