package cli

import (
	"fmt"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/policy"
)

func newPolicyCmd(s *streams) *cobra.Command {
	var toolsFile string
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Check a policy file, list the built-in deny rules, print the file's JSON Schema",
		Long: `A policy file (toolgate.yaml) sets the mode, the rules, roles, limits,
approvals, output budgets and secret patterns that every command applies
(--policy FILE). See toolgate.example.yaml for every field, commented.`,
		Example: `  toolgate policy check toolgate.yaml
  toolgate policy defaults
  toolgate policy schema > toolgate.schema.json`,
	}
	check := &cobra.Command{
		Use:   "check FILE",
		Short: "Load a policy file, run its rules' examples, and report the first problem with its line and column",
		Long: `Check loads FILE as every command would: unknown fields, bad rules and
failing rule examples are errors with the line and column. Exit status 0:
the file is good; 2: it is not.

Then, for each map from tool-name globs to a setting (limits.tools,
limits.tool_principal, output.tools, auth.tool_scopes), it prints which key
decides for each tool this program knows (the built-in tools, and those of
--tools FILE, e.g. a gateway's "toolgate tools --json"). One rule decides in
every such map: the tool's own name beats any glob; among globs the most
specific wins (more literal characters, then fewer wildcards); "*" applies
only where nothing else matches. Two globs equally specific for one name are
an error naming both.`,
		Example: `  toolgate policy check toolgate.yaml
  toolgate policy check toolgate.yaml --tools gateway-tools.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			p, err := loadPolicy(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(s.out, "%s: OK (mode %s, %d deny, %d ask, %d allow rules)\n", args[0], p.Mode, len(p.Deny), len(p.Ask), len(p.Allow))
			names, err := knownToolNames(s, toolsFile)
			if err != nil {
				return err
			}
			return printGlobSettings(s, p.GlobSettings(), names)
		},
	}
	check.Flags().StringVar(&toolsFile, "tools", "", "a JSON array of MCP tools ({name, …}) whose names the report covers too")
	defaults := &cobra.Command{
		Use:     "defaults",
		Short:   "List the rules every policy starts with: protected paths denied, CI definitions asked about, with their reasons",
		Example: "  toolgate policy defaults",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			w := tabwriter.NewWriter(s.out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "EFFECT\tRULE\tWHY")
			for _, d := range policy.DefaultDeny() {
				fmt.Fprintf(w, "deny\t%s\t%s\n", d.Rule, d.Reason)
			}
			for _, c := range policy.CIPaths() {
				fmt.Fprintf(w, "ask\t%s\ta CI definition of %s (allow %s to change it without asking)\n", c.Rule(), c.System, c.AllowRule())
			}
			return w.Flush()
		},
	}
	schema := &cobra.Command{
		Use:     "schema",
		Short:   "Print the JSON Schema of policy files, for editors",
		Example: "  toolgate policy schema > toolgate.schema.json",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := s.out.Write(policy.Schema())
			return err
		},
	}
	cmd.AddCommand(check, defaults, schema)
	return cmd
}

// knownToolNames are the built-in tools' names and those of a tools file,
// sorted, once each.
func knownToolNames(s *streams, toolsFile string) ([]string, error) {
	sets, err := builtinTools(&common{})
	if err != nil {
		return nil, err
	}
	defer sets.Close()
	var names []string
	for _, t := range sets.tools {
		names = append(names, t.Definition().Name)
	}
	if toolsFile != "" {
		defs, err := readToolsFile(s, toolsFile)
		if err != nil {
			return nil, err
		}
		for _, d := range defs {
			names = append(names, d.Name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// printGlobSettings prints, for each glob map, the key that decides for
// each tool and the setting it gives.
func printGlobSettings(s *streams, maps []policy.GlobSetting, names []string) error {
	for _, m := range maps {
		fmt.Fprintf(s.out, "\n%s:\n", m.Field)
		w := tabwriter.NewWriter(s.out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(w, "  TOOL\tDECIDED BY\tSETTING")
		for _, n := range names {
			if key, setting, ok := m.Decide(n); ok {
				fmt.Fprintf(w, "  %s\t%s\t%s\n", n, key, setting)
			} else {
				fmt.Fprintf(w, "  %s\t-\t%s\n", n, m.Otherwise)
			}
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	return nil
}
