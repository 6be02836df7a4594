package cli

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/agent"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/provider/gemini"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tool"
)

func newRunCmd(s *streams) *cobra.Command {
	var c common
	var provider, api, baseURL, model, system, choice string
	var stopAt []string
	var maxIter int
	var strict, noStream bool
	var yes approval
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
			if (provider == "openai" || provider == "anthropic") && s.opts.Models == nil {
				return handOver(s, provider)
			}
			approver, err := yes.approver(s, true)
			if err != nil {
				return err
			}
			opts := engine.Options{Approver: approver}
			c.warm = true // a model runs command after command: keep a sandbox helper ready
			st, err := c.build(opts)
			if err != nil {
				return err
			}
			defer st.Close()
			defs := st.registry.List(registry.Filter{})
			m, err := newModel(s, ModelRequest{
				Provider: provider, API: api, BaseURL: baseURL, Model: model, System: system,
				ToolChoice: choice, Strict: strict, Stream: !noStream, Tools: defs,
			})
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
	yes.register(cmd)
	f.BoolVar(&strict, "strict", false, "OpenAI: send the tools in strict mode (Structured Outputs)")
	f.BoolVar(&noStream, "no-stream", false, "ask for whole replies instead of streamed ones")
	return cmd
}

// newModel builds the conversation for the provider: Gemini here (its
// client is toolgate's own), OpenAI and Anthropic through the program's
// vendor SDKs (Options.Models).
func newModel(s *streams, r ModelRequest) (agent.Model, error) {
	switch r.Provider {
	case "gemini":
		key := os.Getenv("GEMINI_API_KEY")
		if key == "" {
			return nil, usageErr("set GEMINI_API_KEY")
		}
		m, err := gemini.NewChat(&gemini.Client{BaseURL: r.BaseURL, APIKey: key}, gemini.Options{
			Model: r.Model, System: r.System, Tools: r.Tools, ToolChoice: r.ToolChoice, Stream: r.Stream,
		})
		if err != nil {
			return nil, usageErr("%v", err)
		}
		return m, nil
	case "openai", "anthropic":
		m, err := s.opts.Models(r)
		if err != nil {
			return nil, usageErr("%v", err)
		}
		return m, nil
	case "":
		return nil, usageErr("--provider is required: openai, anthropic or gemini")
	}
	return nil, usageErr("unknown provider %q: want openai, anthropic or gemini", r.Provider)
}

// agentProgram is the program with the vendor SDKs linked; handedOver
// marks its environment, so that a program without them under its name
// fails instead of handing over to itself for ever.
const (
	agentProgram = "toolgate-agent"
	handedOver   = "TOOLGATE_HANDED_OVER"
)

// handOver replaces this process with toolgate-agent running the same
// command line, found beside this program or else on PATH. It returns only
// when it cannot.
func handOver(s *streams, provider string) error {
	path, _ := beside(agentProgram)
	if path == "" {
		found, err := exec.LookPath(agentProgram)
		if err != nil {
			return usageErr("--provider %s needs %s, the toolgate program with the vendor SDKs, beside toolgate or on PATH:\n"+
				"  go install github.com/toolgate/toolgate/cmd/%s@latest\n"+
				"(--provider gemini works without it)", provider, agentProgram, agentProgram)
		}
		path = found
	}
	if os.Getenv(handedOver) != "" { // toolgate-agent is a copy of a program without the SDKs
		return usageErr("%s at %s cannot run --provider %s: it is not the toolgate-agent program", agentProgram, path, provider)
	}
	err := syscall.Exec(path, append([]string{path}, s.args...), append(os.Environ(), handedOver+"=1"))
	return fmt.Errorf("starting %s: %w", path, err)
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
