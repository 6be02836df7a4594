package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/registry"
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
outputSchema and annotations.`,
		Example: `  toolgate tools
  toolgate tools --format mcp | jq '.[].name'`,
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
				return usageErr("unknown --format %q: this build knows mcp", format)
			}
		},
	}
	c.register(cmd)
	cmd.Flags().StringVar(&format, "format", "", "output format: mcp (JSON)")
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

func printJSON(s *streams, v any) error {
	enc := json.NewEncoder(s.out)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
