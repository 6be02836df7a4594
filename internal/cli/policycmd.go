package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/policy"
)

func newPolicyCmd(s *streams) *cobra.Command {
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
the file is good; 2: it is not.`,
		Example: "  toolgate policy check toolgate.yaml",
		Args:    cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			p, err := loadPolicy(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(s.out, "%s: OK (mode %s, %d deny, %d ask, %d allow rules)\n", args[0], p.Mode, len(p.Deny), len(p.Ask), len(p.Allow))
			return nil
		},
	}
	defaults := &cobra.Command{
		Use:     "defaults",
		Short:   "List the deny rules every policy starts with (protected paths), with their reasons",
		Example: "  toolgate policy defaults",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			w := tabwriter.NewWriter(s.out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "RULE\tWHY")
			for _, d := range policy.DefaultDeny() {
				fmt.Fprintf(w, "%s\t%s\n", d.Rule, d.Reason)
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
