package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/schema"
	"github.com/toolgate/toolgate/tool"
)

// maxToolsFile bounds a tools file read by lint.
const maxToolsFile = 64 << 20

func newLintCmd(s *streams) *cobra.Command {
	var c common
	var provider string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "lint [FILE]",
		Short: "Check tool definitions for what makes a model misuse them or a provider refuse them",
		Long: `Check tool definitions: the built-in tools by default, or the tools in FILE (a
JSON array of MCP-shaped tools {name, description, inputSchema}; - reads
standard input). The checks: self-explaining snake_case names, a description
that says when to use the tool and when not, every parameter described and
typed with its default, enums for closed sets, no two tools so alike that a
model would hesitate, at most about 20 tools in one request. --provider also
compiles every schema for that API and lists what compiling changes.

Prints one finding a line (--json: {"findings":[…],"errors":N,"warnings":N}).
Exit 1 when there is an error, 0 otherwise (warnings included).`,
		Example: `  toolgate lint
  toolgate lint --provider openai-strict tools.json
  toolgate tools --format mcp | toolgate lint --json -`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var p schema.Provider
			if provider != "" {
				p = schema.Provider(provider)
				known := false
				for _, k := range schema.Providers() {
					known = known || k == p
				}
				if !known {
					return usageErr("unknown --provider %q: use openai-strict, openai, anthropic or gemini", provider)
				}
			}
			var defs []tool.Definition
			if len(args) == 1 {
				var err error
				if defs, err = readToolsFile(s, args[0]); err != nil {
					return err
				}
			} else {
				sets, err := builtinTools(&c)
				if err != nil {
					return err
				}
				defer sets.Close()
				reg := registry.New()
				if err := reg.Register(sets.tools...); err != nil {
					return err
				}
				defs = reg.List(registry.Filter{})
			}
			findings := schema.Lint(defs, schema.LintOptions{Provider: p})
			errs, warns := 0, 0
			for _, f := range findings {
				switch f.Severity {
				case schema.SeverityError:
					errs++
				case schema.SeverityWarning:
					warns++
				}
			}
			if asJSON {
				if findings == nil {
					findings = []schema.Finding{}
				}
				if err := printJSON(s, map[string]any{"tools": len(defs), "findings": findings, "errors": errs, "warnings": warns}); err != nil {
					return err
				}
			} else {
				for _, f := range findings {
					fmt.Fprintln(s.out, f.String())
				}
				fmt.Fprintf(s.out, "%d tools: %d errors, %d warnings\n", len(defs), errs, warns)
			}
			if errs > 0 {
				return failed
			}
			return nil
		},
	}
	c.register(cmd)
	cmd.Flags().StringVar(&provider, "provider", "", "also check against a model API: openai-strict, openai, anthropic, gemini")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the findings as JSON")
	return cmd
}

// readToolsFile reads a JSON array of MCP-shaped tools.
func readToolsFile(s *streams, path string) ([]tool.Definition, error) {
	var r io.Reader = s.in
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, usageErr("tools file: %v", err)
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxToolsFile+1))
	if err != nil {
		return nil, usageErr("tools file: %v", err)
	}
	if len(data) > maxToolsFile {
		return nil, usageErr("tools file: over %d bytes", maxToolsFile)
	}
	var tools []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	if err := json.Unmarshal(data, &tools); err != nil {
		return nil, usageErr("tools file %s: want a JSON array of {name, description, inputSchema}: %v", path, err)
	}
	defs := make([]tool.Definition, len(tools))
	for i, t := range tools {
		defs[i] = tool.Definition{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}
	}
	return defs, nil
}
