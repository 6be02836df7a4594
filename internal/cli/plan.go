package cli

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"

	"github.com/goccy/go-yaml"
	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/orchestrate"
	"github.com/toolgate/toolgate/tool"
)

// registerComposites adds --composites to a command that builds an engine.
func (c *common) registerComposites(cmd *cobra.Command) {
	cmd.Flags().StringVar(&c.composites, "composites", "", "file (YAML or JSON) of composite tools and fallbacks to add to the built-in tools")
}

// addOrchestration registers run_plan and the composites and fallbacks of
// c.composites, once the engine exists.
func (s *setup) addOrchestration(c *common) error {
	s.runner = orchestrate.NewRunner(s.engine, orchestrate.Limits{})
	if err := s.registry.Register(orchestrate.RunPlanTool(s.runner)); err != nil {
		return err
	}
	if c.composites == "" {
		return nil
	}
	f, err := orchestrate.LoadFile(c.composites, orchestrate.Limits{})
	if err != nil {
		return usageErr("--composites: %v", err)
	}
	if err := f.Apply(s.runner); err != nil {
		return usageErr("--composites %s: %v", c.composites, err)
	}
	return nil
}

func newPlanCmd(s *streams) *cobra.Command {
	plan := &cobra.Command{
		Use:   "plan",
		Short: "Run plans: several tool calls as one graph",
	}
	var c common
	var yes approval
	var session, principal string
	run := &cobra.Command{
		Use:   "run FILE",
		Short: "Run a plan file (JSON or YAML) and print its report as JSON",
		Long: `Run a plan: steps {id, tool, args, when?, on_failure?, after?} whose arguments
may refer to earlier steps' results ({"$ref": "step.structured.path"}), run in
parallel where no step needs another. The whole plan is checked first; then
every step is one governed, audited call (as with 'toolgate call'), with call
id PLAN/STEP in the audit log. FILE "-" reads the plan from standard input.
The plan language is the one of the run_plan tool ('toolgate tools' shows its
description).

The output is one JSON object as for 'toolgate call', whose "structured" is
the report: {"status", "failed_step"?, "steps": [{id, tool, status, reason?,
text?, structured?, error?, fallback?, call_id}, …]} in the plan's order.

Exit status: 0 the plan ran (failures of "skip" steps included), 1 a step
stopped it, 2 usage error (including a plan that is not valid: the JSON
lists each problem with its step and JSON pointer).`,
		Example: `  toolgate plan run plan.json --root .
  toolgate plan run deploy.yaml --composites composites.yaml --yes`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := readPlanFile(s, args[0])
			if err != nil {
				return err
			}
			approver, err := yes.approver(s, args[0] != "-")
			if err != nil {
				return err
			}
			opts := engine.Options{Approver: approver}
			st, err := c.build(opts)
			if err != nil {
				return err
			}
			defer st.Close()
			if principal == "" {
				principal = os.Getenv("USER")
			}
			p, err := orchestrate.Parse(data, orchestrate.Limits{})
			if err == nil {
				err = st.runner.Validate(p)
			}
			if err != nil {
				if perr := printJSON(s, tool.ErrorResult(tool.AsError(err))); perr != nil {
					return perr
				}
				return &exitError{exitUsage, err}
			}
			var b [6]byte
			rand.Read(b[:])
			parent := tool.Call{ID: "plan_" + hex.EncodeToString(b[:]), Name: orchestrate.RunPlanName, Session: session, Principal: principal}
			rep, err := st.runner.Run(cmd.Context(), p, parent)
			if err != nil {
				return &exitError{exitUsage, err}
			}
			res := rep.Result()
			return printResult(s, res)
		},
	}
	c.register(run)
	c.registerComposites(run)
	f := run.Flags()
	yes.register(run)
	f.StringVar(&session, "session", "", "session id recorded in the audit log")
	f.StringVar(&principal, "principal", "", "who is calling, for policy and audit (default: $USER)")
	plan.AddCommand(run)
	return plan
}

// readPlanFile reads a plan from a file or stdin ("-"), YAML turned into
// JSON.
func readPlanFile(s *streams, name string) ([]byte, error) {
	var data []byte
	var err error
	if name == "-" {
		data, err = io.ReadAll(io.LimitReader(s.in, 8<<20))
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, usageErr("reading the plan: %v", err)
	}
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] != '{' {
		if data, err = yaml.YAMLToJSON(data); err != nil {
			return nil, usageErr("the plan %s is neither JSON nor YAML: %v", name, err)
		}
	}
	return data, nil
}
