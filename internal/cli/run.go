package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	anthropicsdk "github.com/anthropics/anthropic-sdk-go/v2"
	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	openaisdk "github.com/openai/openai-go/v3"
	openaiopt "github.com/openai/openai-go/v3/option"
	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/agent"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/provider/anthropic"
	"github.com/toolgate/toolgate/provider/gemini"
	"github.com/toolgate/toolgate/provider/openai"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tool"
)

func newRunCmd(s *streams) *cobra.Command {
	var c common
	var provider, api, baseURL, model, system, choice string
	var stopAt []string
	var maxIter int
	var yes, strict, noStream bool
	cmd := &cobra.Command{
		Use:   "run --provider openai|anthropic|gemini --model M [--base-url URL] TASK",
		Short: "Let a model do a task with the built-in tools, every call governed",
		Long: `Give TASK to a model with the built-in tools and run the loop: the model's
calls go through the governed pipeline (policy, limits, audit), their results
go back to it, until it answers, calls a --stop-at tool, or has been asked
--max-iterations times (exit 1, with a message saying so).

The answer streams to standard output; each call and a summary line go to
standard error. The API key comes from OPENAI_API_KEY, ANTHROPIC_API_KEY or
GEMINI_API_KEY and is never printed. --base-url points the OpenAI client at any compatible
server (Ollama, vLLM, llama.cpp), which may need no key.

Exit status: 0 the model answered (or called a --stop-at tool), 1 the model
API failed or the iteration limit was reached, 2 usage error.`,
		Example: `  toolgate run --provider openai --model gpt-4.1 "summarise README.md"
  toolgate run --provider openai --base-url http://localhost:11434/v1 --model qwen3 "list the Go files"
  toolgate run --provider anthropic --model claude-sonnet-4-5 --root ./docs "fix the typos in intro.md" --yes`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if model == "" {
				return usageErr("--model is required")
			}
			opts := engine.Options{}
			if yes {
				opts.Approver = policy.ApproveAll("cli --yes")
			} else if tty, ok := s.in.(*os.File); ok {
				if term, err := policy.NewTerminal(tty, s.err); err == nil {
					opts.Approver = term
				}
			}
			st, err := c.build(opts)
			if err != nil {
				return err
			}
			defer st.Close()
			defs := st.registry.List(registry.Filter{})
			m, err := newModel(provider, api, baseURL, model, system, choice, strict, !noStream, defs)
			if err != nil {
				return err
			}
			principal := os.Getenv("USER")
			text := &endsWith{w: s.out}
			out, err := agent.Run(cmd.Context(), m, args[0], agent.Options{
				Executor:      st.engine,
				MaxIterations: maxIter,
				StopAt:        stopAt,
				Text:          text,
				Principal:     principal,
				OnCall: func(call tool.Call, res tool.Result) {
					status := "ok"
					if res.Error != nil {
						status = string(res.Error.Type) + ": " + res.Error.Message
					}
					fmt.Fprintf(s.err, "toolgate: %s → %s\n", call.Name, firstLine(status))
				},
			})
			if text.n > 0 && !text.newline {
				fmt.Fprintln(s.out)
			}
			fmt.Fprintf(s.err, "toolgate run: %s after %d request(s), %d call(s), %d failed\n", describe(out), out.Iterations, out.Calls, out.Failed)
			if err != nil {
				return &exitError{exitTool, err}
			}
			return nil
		},
	}
	c.register(cmd)
	f := cmd.Flags()
	f.StringVar(&provider, "provider", "", "model API: openai, anthropic or gemini")
	f.StringVar(&api, "api", "chat", "OpenAI API: chat (Chat Completions, what compatible servers speak) or responses")
	f.StringVar(&baseURL, "base-url", "", "the API's base URL (e.g. http://localhost:11434/v1 for Ollama; Gemini: …/v1beta); default: the vendor's")
	f.StringVar(&model, "model", "", "model name")
	f.StringVar(&system, "system", "", "system prompt")
	f.StringVar(&choice, "tool-choice", "", "auto, none or required (Anthropic: any); default: the API's (auto)")
	f.StringArrayVar(&stopAt, "stop-at", nil, "a tool whose successful call ends the run (repeatable)")
	f.IntVar(&maxIter, "max-iterations", 10, "the most times the model is asked")
	f.BoolVarP(&yes, "yes", "y", false, "approve calls that the policy would ask about")
	f.BoolVar(&strict, "strict", false, "OpenAI: send the tools in strict mode (Structured Outputs)")
	f.BoolVar(&noStream, "no-stream", false, "ask for whole replies instead of streamed ones")
	return cmd
}

// newModel builds the conversation for the provider.
func newModel(provider, api, baseURL, model, system, choice string, strict, stream bool, defs []tool.Definition) (agent.Model, error) {
	switch provider {
	case "openai":
		key := os.Getenv("OPENAI_API_KEY")
		opts := []openaiopt.RequestOption{openaiopt.WithMaxRetries(2)}
		if baseURL != "" {
			opts = append(opts, openaiopt.WithBaseURL(baseURL))
			if key == "" {
				key = "none" // local servers (Ollama, llama.cpp) take any key
			}
		}
		if key == "" {
			return nil, usageErr("set OPENAI_API_KEY (or give --base-url for a server that needs no key)")
		}
		client := openaisdk.NewClient(append(opts, openaiopt.WithAPIKey(key))...)
		o := openai.Options{Model: model, System: system, Tools: defs, Strict: strict, ToolChoice: choice, Stream: stream}
		var m agent.Model
		var err error
		switch api {
		case "chat", "":
			m, err = openai.NewChat(client, o)
		case "responses":
			m, err = openai.NewResponses(client, o)
		default:
			return nil, usageErr("--api must be chat or responses, not %q", api)
		}
		if err != nil {
			return nil, usageErr("%v", err)
		}
		return m, nil
	case "anthropic":
		key := os.Getenv("ANTHROPIC_API_KEY")
		if key == "" {
			return nil, usageErr("set ANTHROPIC_API_KEY")
		}
		opts := []anthropicopt.RequestOption{anthropicopt.WithMaxRetries(2), anthropicopt.WithAPIKey(key)}
		if baseURL != "" {
			opts = append(opts, anthropicopt.WithBaseURL(baseURL))
		}
		m, err := anthropic.NewMessages(anthropicsdk.NewClient(opts...), anthropic.Options{
			Model: model, System: system, Tools: defs, ToolChoice: choice, Stream: stream,
		})
		if err != nil {
			return nil, usageErr("%v", err)
		}
		return m, nil
	case "gemini":
		key := os.Getenv("GEMINI_API_KEY")
		if key == "" {
			return nil, usageErr("set GEMINI_API_KEY")
		}
		m, err := gemini.NewChat(&gemini.Client{BaseURL: baseURL, APIKey: key}, gemini.Options{
			Model: model, System: system, Tools: defs, ToolChoice: choice, Stream: stream,
		})
		if err != nil {
			return nil, usageErr("%v", err)
		}
		return m, nil
	case "":
		return nil, usageErr("--provider is required: openai, anthropic or gemini")
	}
	return nil, usageErr("unknown provider %q: want openai, anthropic or gemini", provider)
}

func describe(o agent.Outcome) string {
	switch o.Stop {
	case agent.StopAnswered:
		return "answered"
	case agent.StopTool:
		return "stopped at " + o.StopTool
	case agent.StopMaxIterations:
		return "stopped at the iteration limit"
	}
	return "failed"
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// endsWith remembers whether the text written so far ends in a newline.
type endsWith struct {
	w       io.Writer
	n       int
	newline bool
}

func (e *endsWith) Write(p []byte) (int, error) {
	if len(p) > 0 {
		e.n += len(p)
		e.newline = p[len(p)-1] == '\n'
	}
	return e.w.Write(p)
}
