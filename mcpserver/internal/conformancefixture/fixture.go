// Package conformancefixture is a test-only MCP server that implements the
// fixture of the official conformance suite (npm @modelcontextprotocol/conformance):
// the tools, resources and prompts its scenarios name (test_simple_text,
// test://static-text, test_simple_prompt, …). It is built on mcpserver, so
// the suite exercises toolgate's server: its tools are tool.Tools in a
// registry and every call goes through the governed engine.
package conformancefixture

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/mcpserver"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tool"
)

// Minimal media, as in the suite's reference servers.
const (
	pngBase64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
	wavBase64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
)

// WatchedURI is the resource that is reported updated every few seconds.
const WatchedURI = "test://watched-resource"

func decode(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		panic(err) // a constant above is broken
	}
	return b
}

// New returns the fixture server. Stop its background work with ctx.
func New(ctx context.Context) (*mcpserver.Server, error) {
	reg := registry.New()
	if err := reg.Register(Tools()...); err != nil {
		return nil, err
	}
	eng := engine.New(engine.Options{Registry: reg, Timeout: 2 * time.Minute})
	srv, err := mcpserver.New(mcpserver.Options{
		Engine:    eng,
		Name:      "toolgate-conformance-fixture",
		Version:   "1.0.0",
		NoPrompts: true,
		MCP: &mcp.ServerOptions{
			CompletionHandler: func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
				return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
			},
			SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
			UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
		},
	})
	if err != nil {
		return nil, err
	}
	addResources(srv.MCP())
	addPrompts(srv.MCP())
	go func() {
		t := time.NewTicker(3 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				srv.MCP().ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: WatchedURI})
			}
		}
	}()
	return srv, nil
}

func noArgs(name, desc string, fn func(context.Context, tool.Call) (tool.Result, error)) tool.Tool {
	return tool.Func(tool.Definition{Name: name, Description: desc}, fn)
}

func result(cs ...tool.Content) tool.Result { return tool.Result{Content: cs} }

// Tools returns the fixture's tools.
func Tools() []tool.Tool {
	return []tool.Tool{
		noArgs("test_simple_text", "Tests simple text content response", func(context.Context, tool.Call) (tool.Result, error) {
			return tool.TextResult("This is a simple text response for testing."), nil
		}),
		noArgs("test_image_content", "Tests image content response", func(context.Context, tool.Call) (tool.Result, error) {
			return result(tool.ImageContent(decode(pngBase64), "image/png")), nil
		}),
		noArgs("test_audio_content", "Tests audio content response", func(context.Context, tool.Call) (tool.Result, error) {
			return result(tool.Content{Type: "audio", Data: decode(wavBase64), MIMEType: "audio/wav"}), nil
		}),
		noArgs("test_embedded_resource", "Tests embedded resource content response", func(context.Context, tool.Call) (tool.Result, error) {
			return result(tool.Content{Type: "resource", URI: "test://embedded-resource", MIMEType: "text/plain", Text: "This is an embedded resource"}), nil
		}),
		noArgs("test_multiple_content_types", "Tests response with multiple content types (text, image, resource)", func(context.Context, tool.Call) (tool.Result, error) {
			return result(
				tool.TextContent("This is text content"),
				tool.ImageContent(decode(pngBase64), "image/png"),
				tool.Content{Type: "resource", URI: "test://embedded-in-multiple", MIMEType: "text/plain", Text: "This is an embedded resource"},
			), nil
		}),
		noArgs("test_tool_with_logging", "Tests tool that emits log messages during execution", func(ctx context.Context, _ tool.Call) (tool.Result, error) {
			log := tool.Logger(ctx)
			log.InfoContext(ctx, "Tool execution started")
			log.InfoContext(ctx, "Tool processing data")
			log.InfoContext(ctx, "Tool execution completed")
			return tool.TextResult("Tool with logging executed successfully"), nil
		}),
		noArgs("test_tool_with_progress", "Tests tool that reports progress notifications", func(ctx context.Context, _ tool.Call) (tool.Result, error) {
			for _, p := range []float64{0, 50, 100} {
				tool.ReportProgress(ctx, p, 100, fmt.Sprintf("Completed step %.0f of 100", p))
			}
			return tool.TextResult("Progress reported: 0, 50, 100 of 100"), nil
		}),
		noArgs("test_error_handling", "Tests error response handling", func(context.Context, tool.Call) (tool.Result, error) {
			return tool.Result{}, errors.New("this tool intentionally returns an error for testing")
		}),
		tool.Func(tool.Definition{
			Name: "test_sampling", Description: "Tests server-initiated sampling (LLM completion request)",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string","description":"The prompt to send to the LLM"}},"required":["prompt"]}`),
		}, sampling),
		tool.Func(tool.Definition{
			Name: "test_elicitation", Description: "Tests server-initiated elicitation (user input request)",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"The message to show the user"}},"required":["message"]}`),
		}, func(ctx context.Context, c tool.Call) (tool.Result, error) {
			var in struct{ Message string }
			json.Unmarshal(c.Args, &in)
			return elicit(ctx, in.Message, map[string]any{
				"type":       "object",
				"properties": map[string]any{"username": map[string]any{"type": "string", "description": "Your preferred username"}},
				"required":   []string{"username"},
			})
		}),
		noArgs("test_elicitation_sep1034_defaults", "Tests elicitation with default values per SEP-1034", func(ctx context.Context, _ tool.Call) (tool.Result, error) {
			return elicit(ctx, "Test defaults for primitives", map[string]any{
				"type": "object",
				"properties": map[string]any{
					"name":     map[string]any{"type": "string", "description": "User name", "default": "John Doe"},
					"age":      map[string]any{"type": "integer", "description": "User age", "default": 30},
					"score":    map[string]any{"type": "number", "description": "User score", "default": 95.5},
					"status":   map[string]any{"type": "string", "description": "User status", "enum": []string{"active", "inactive", "pending"}, "default": "active"},
					"verified": map[string]any{"type": "boolean", "description": "Verification status", "default": true},
				},
			})
		}),
		noArgs("test_elicitation_sep1330_enums", "Tests elicitation with enum schema improvements per SEP-1330", func(ctx context.Context, _ tool.Call) (tool.Result, error) {
			titled := []map[string]any{{"const": "value1", "title": "First Option"}, {"const": "value2", "title": "Second Option"}, {"const": "value3", "title": "Third Option"}}
			return elicit(ctx, "Test enum schemas", map[string]any{
				"type": "object",
				"properties": map[string]any{
					"untitledSingle": map[string]any{"type": "string", "enum": []string{"option1", "option2", "option3"}},
					"titledSingle":   map[string]any{"type": "string", "oneOf": titled},
					"legacyEnum":     map[string]any{"type": "string", "enum": []string{"opt1", "opt2", "opt3"}, "enumNames": []string{"Option One", "Option Two", "Option Three"}},
					"untitledMulti":  map[string]any{"type": "array", "minItems": 1, "maxItems": 3, "items": map[string]any{"type": "string", "enum": []string{"option1", "option2", "option3"}}},
					"titledMulti":    map[string]any{"type": "array", "minItems": 1, "maxItems": 3, "items": map[string]any{"type": "string", "anyOf": titled}},
				},
			})
		}),
		tool.Func(tool.Definition{
			Name: "json_schema_2020_12_tool", Description: "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
			InputSchema: json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"}},"additionalProperties":false}`),
		}, func(_ context.Context, c tool.Call) (tool.Result, error) {
			return tool.TextResult(fmt.Sprintf("JSON Schema 2020-12 tool called with: %s", c.Args)), nil
		}),
	}
}

func sampling(ctx context.Context, c tool.Call) (tool.Result, error) {
	var in struct{ Prompt string }
	json.Unmarshal(c.Args, &in)
	ss := mcpserver.SessionFromContext(ctx)
	if ss == nil {
		return tool.Result{}, tool.Errorf(tool.Unavailable, "sampling needs an MCP client")
	}
	res, err := ss.CreateMessage(ctx, &mcp.CreateMessageParams{
		Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Prompt}}},
		MaxTokens: 100,
	})
	if err != nil {
		return tool.Result{}, fmt.Errorf("sampling failed: %w", err)
	}
	text := "(non-text response)"
	if tc, ok := res.Content.(*mcp.TextContent); ok {
		text = tc.Text
	}
	return tool.TextResult("LLM response: " + text), nil
}

func elicit(ctx context.Context, message string, schema map[string]any) (tool.Result, error) {
	ss := mcpserver.SessionFromContext(ctx)
	if ss == nil {
		return tool.Result{}, tool.Errorf(tool.Unavailable, "elicitation needs an MCP client")
	}
	res, err := ss.Elicit(ctx, &mcp.ElicitParams{Message: message, RequestedSchema: schema})
	if err != nil {
		return tool.Result{}, fmt.Errorf("elicitation failed: %w", err)
	}
	return tool.TextResult(fmt.Sprintf("Elicitation result: action=%s, content=%v", res.Action, res.Content)), nil
}

func text(uri, mime, s string) *mcp.ReadResourceResult {
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: mime, Text: s}}}
}

func addResources(s *mcp.Server) {
	s.AddResource(&mcp.Resource{Name: "static-text", Description: "A static text resource for testing", MIMEType: "text/plain", URI: "test://static-text"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return text(r.Params.URI, "text/plain", "This is the content of the static text resource."), nil
		})
	s.AddResource(&mcp.Resource{Name: "static-binary", Description: "A static binary resource (image) for testing", MIMEType: "image/png", URI: "test://static-binary"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "image/png", Blob: decode(pngBase64)}}}, nil
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{Name: "template", Description: "A resource template with parameter substitution", MIMEType: "application/json", URITemplate: "test://template/{id}/data"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			var id string
			fmt.Sscanf(r.Params.URI, "test://template/%s", &id)
			if i := len(id) - len("/data"); i >= 0 && id[i:] == "/data" {
				id = id[:i]
			}
			b, _ := json.Marshal(map[string]any{"id": id, "templateTest": true, "data": "Data for ID: " + id})
			return text(r.Params.URI, "application/json", string(b)), nil
		})
	s.AddResource(&mcp.Resource{Name: "watched-resource", Description: "A resource that auto-updates every 3 seconds", MIMEType: "text/plain", URI: WatchedURI},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return text(r.Params.URI, "text/plain", "Watched resource content"), nil
		})
}

func user(c mcp.Content) *mcp.PromptMessage { return &mcp.PromptMessage{Role: "user", Content: c} }

func addPrompts(s *mcp.Server) {
	s.AddPrompt(&mcp.Prompt{Name: "test_simple_prompt", Title: "Simple Test Prompt", Description: "A simple prompt without arguments"},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Description: "A simple test prompt", Messages: []*mcp.PromptMessage{user(&mcp.TextContent{Text: "This is a simple prompt for testing."})}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_arguments", Title: "Prompt With Arguments", Description: "A prompt with required arguments",
		Arguments: []*mcp.PromptArgument{{Name: "arg1", Description: "First test argument", Required: true}, {Name: "arg2", Description: "Second test argument", Required: true}}},
		func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			t := fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", r.Params.Arguments["arg1"], r.Params.Arguments["arg2"])
			return &mcp.GetPromptResult{Description: "A prompt with arguments", Messages: []*mcp.PromptMessage{user(&mcp.TextContent{Text: t})}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_embedded_resource", Title: "Prompt With Embedded Resource", Description: "A prompt that includes an embedded resource",
		Arguments: []*mcp.PromptArgument{{Name: "resourceUri", Description: "URI of the resource to embed", Required: true}}},
		func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Description: "A prompt with an embedded resource", Messages: []*mcp.PromptMessage{
				user(&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: r.Params.Arguments["resourceUri"], MIMEType: "text/plain", Text: "Embedded resource content for testing."}}),
				user(&mcp.TextContent{Text: "Please process the embedded resource above."}),
			}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_image", Title: "Prompt With Image", Description: "A prompt that includes image content"},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Description: "A prompt with an image", Messages: []*mcp.PromptMessage{
				user(&mcp.ImageContent{Data: decode(pngBase64), MIMEType: "image/png"}),
				user(&mcp.TextContent{Text: "Please analyze the image above."}),
			}}, nil
		})
}
