package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/schema"
	"github.com/toolgate/toolgate/tool"
)

func newToolsCmd(s *streams) *cobra.Command {
	var c common
	var format string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "List the tools a model may call, with their schemas",
		Long: `List the registered tools. By default a table for people: name, permission
level (0 read, 1 write, 2 medium, 3 high) and summary. --format mcp (or --json)
prints the definitions as MCP tools: name, title, description, inputSchema,
outputSchema and annotations. The other formats print the tools parameter of
a model API, each schema compiled for it (see toolgate lint --provider for
what compiling changes):
  openai            Chat Completions: [{"type":"function","function":{name,description,parameters}}]
  openai-strict     the same with "strict": true (every property required, optional ones nullable)
  openai-responses  Responses API: [{"type":"function",name,description,parameters,"strict":true}]
  anthropic         Messages API: [{name,description,input_schema}]
  gemini            [{"functionDeclarations":[{name,description,parameters}]}]

` + commandToolsLong,
		Example: `  toolgate tools
  toolgate tools --format mcp | jq '.[].name'
  toolgate tools --format openai-strict > tools.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if asJSON && format == "" {
				format = "mcp"
			}
			sets, err := builtinTools(&c)
			if err != nil {
				return err
			}
			defer sets.Close()
			if sets.withheld != "" {
				fmt.Fprintln(s.err, "toolgate:", sets.withheld)
			}
			reg := registry.New()
			if err := reg.Register(sets.tools...); err != nil {
				return err
			}
			defs := reg.List(registry.Filter{})
			switch format {
			case "":
				return printTable(s, defs)
			case "mcp":
				return printJSON(s, mcpTools(defs))
			default:
				out, err := vendorTools(s, format, defs)
				if err != nil {
					return err
				}
				return printJSON(s, out)
			}
		},
	}
	c.register(cmd)
	cmd.Flags().StringVar(&format, "format", "", "output format (JSON): mcp, openai, openai-strict, openai-responses, anthropic, gemini")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (same as --format mcp)")
	return cmd
}

func printTable(s *streams, defs []tool.Definition) error {
	w := tabwriter.NewWriter(s.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tLEVEL\tSUMMARY")
	for _, d := range defs {
		summary, _, _ := strings.Cut(d.Description, "\n")
		if i := strings.Index(summary, ". "); i > 0 {
			summary = summary[:i+1]
		}
		fmt.Fprintf(w, "%s\t%d\t%s\n", d.Name, d.Level, summary)
	}
	return w.Flush()
}

// mcpTool is a definition in MCP's tools/list shape.
type mcpTool struct {
	Name         string           `json:"name"`
	Title        string           `json:"title,omitempty"`
	Description  string           `json:"description"`
	InputSchema  json.RawMessage  `json:"inputSchema"`
	OutputSchema json.RawMessage  `json:"outputSchema,omitempty"`
	Annotations  tool.Annotations `json:"annotations"`
}

func mcpTools(defs []tool.Definition) []mcpTool {
	out := make([]mcpTool, len(defs))
	for i, d := range defs {
		out[i] = mcpTool{d.Name, d.Title, d.Description, d.InputSchema, d.OutputSchema, d.Annotations}
	}
	return out
}

// Tool shapes of the model APIs' tools parameters.
type (
	openaiFunction struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      *bool           `json:"strict,omitempty"`
	}
	openaiChatTool struct {
		Type     string         `json:"type"`
		Function openaiFunction `json:"function"`
	}
	openaiResponsesTool struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      bool            `json:"strict"`
	}
	anthropicTool struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	geminiDeclaration struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	}
	geminiTool struct {
		FunctionDeclarations []geminiDeclaration `json:"functionDeclarations"`
	}
)

// vendorTools renders defs as the tools parameter of a model API. A schema
// that strict mode cannot take is sent with "strict": false (and a note on
// stderr) rather than refused.
func vendorTools(s *streams, format string, defs []tool.Definition) (any, error) {
	target := map[string]schema.Provider{
		"openai": schema.OpenAI, "openai-strict": schema.OpenAIStrict, "openai-responses": schema.OpenAIStrict,
		"anthropic": schema.Anthropic, "gemini": schema.Gemini,
	}
	p, ok := target[format]
	if !ok {
		return nil, usageErr("unknown --format %q: use mcp, openai, openai-strict, openai-responses, anthropic or gemini", format)
	}
	var chat []openaiChatTool
	var responses []openaiResponsesTool
	var anthropic []anthropicTool
	var gemini []geminiDeclaration
	for _, d := range defs {
		strict := p == schema.OpenAIStrict
		c, err := schema.CompileFor(p, d.InputSchema)
		if err != nil && strict {
			fmt.Fprintf(s.err, "toolgate: %s: strict mode cannot take its schema (%v); sent with strict false\n", d.Name, err)
			strict = false
			c, err = schema.CompileFor(schema.OpenAI, d.InputSchema)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.Name, err)
		}
		switch format {
		case "openai", "openai-strict":
			f := openaiFunction{Name: d.Name, Description: d.Description, Parameters: c.Schema}
			if format == "openai-strict" {
				f.Strict = &strict
			}
			chat = append(chat, openaiChatTool{Type: "function", Function: f})
		case "openai-responses":
			responses = append(responses, openaiResponsesTool{Type: "function", Name: d.Name, Description: d.Description, Parameters: c.Schema, Strict: strict})
		case "anthropic":
			anthropic = append(anthropic, anthropicTool{Name: d.Name, Description: d.Description, InputSchema: c.Schema})
		case "gemini":
			gemini = append(gemini, geminiDeclaration{Name: d.Name, Description: d.Description, Parameters: c.Schema})
		}
	}
	switch format {
	case "openai", "openai-strict":
		return nonNil(chat), nil
	case "openai-responses":
		return nonNil(responses), nil
	case "anthropic":
		return nonNil(anthropic), nil
	}
	return []geminiTool{{FunctionDeclarations: nonNil(gemini)}}, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// printResult prints a call's result as the CLI contract says; a tool's
// error is exit 1.
func printResult(s *streams, res tool.Result) error {
	if err := printJSON(s, res); err != nil {
		return err
	}
	if res.IsError() {
		return failed
	}
	return nil
}

func printJSON(s *streams, v any) error {
	enc := json.NewEncoder(s.out)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
