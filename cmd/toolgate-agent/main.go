// Command toolgate-agent is toolgate with the OpenAI and Anthropic SDKs
// linked: every command of toolgate, and `run --provider openai|anthropic`,
// which toolgate hands over to this program. It is a program of its own so
// that toolgate, which serves and calls tools, stays lean.
package main

import (
	"errors"
	"fmt"
	"os"

	anthropicsdk "github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	openaisdk "github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"

	"github.com/toolgate/toolgate/agent"
	"github.com/toolgate/toolgate/internal/cli"
	"github.com/toolgate/toolgate/provider/anthropic"
	"github.com/toolgate/toolgate/provider/openai"
)

func main() { cli.Main(cli.Options{Models: models}) }

// models starts a conversation through the vendor's SDK.
func models(r cli.ModelRequest) (agent.Model, error) {
	switch r.Provider {
	case "openai":
		key := os.Getenv("OPENAI_API_KEY")
		opts := []openaiopt.RequestOption{openaiopt.WithMaxRetries(2)}
		if r.BaseURL != "" {
			opts = append(opts, openaiopt.WithBaseURL(r.BaseURL))
			if key == "" {
				key = "none" // local servers (Ollama, llama.cpp) take any key
			}
		}
		if key == "" {
			return nil, errors.New("set OPENAI_API_KEY (or give --base-url for a server that needs no key)")
		}
		client := openaisdk.NewClient(append(opts, openaiopt.WithAPIKey(key))...)
		o := openai.Options{Model: r.Model, System: r.System, Tools: r.Tools, Strict: r.Strict, ToolChoice: r.ToolChoice, Stream: r.Stream}
		switch r.API {
		case "chat", "":
			return openai.NewChat(client, o)
		case "responses":
			return openai.NewResponses(client, o)
		}
		return nil, fmt.Errorf("--api must be chat or responses, not %q", r.API)
	case "anthropic":
		key := os.Getenv("ANTHROPIC_API_KEY")
		if key == "" {
			return nil, errors.New("set ANTHROPIC_API_KEY")
		}
		opts := []anthropicopt.RequestOption{anthropicopt.WithMaxRetries(2), anthropicopt.WithAPIKey(key)}
		if r.BaseURL != "" {
			opts = append(opts, anthropicopt.WithBaseURL(r.BaseURL))
		}
		return anthropic.NewMessages(anthropicsdk.NewClient(opts...), anthropic.Options{
			Model: r.Model, System: r.System, Tools: r.Tools, ToolChoice: r.ToolChoice, Stream: r.Stream,
		})
	}
	return nil, fmt.Errorf("unknown provider %q", r.Provider)
}
