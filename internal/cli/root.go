package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// Exit codes of the CLI contract.
const (
	exitOK    = 0 // success
	exitTool  = 1 // the tool (or check) reported a failure
	exitUsage = 2 // the command line was wrong
)

// exitError carries an exit code up to run.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

// usageErr is a command-line mistake: exit 2.
func usageErr(format string, args ...any) error {
	return &exitError{exitUsage, fmt.Errorf(format, args...)}
}

// failed is a reported failure whose output is already printed: exit 1.
var failed = &exitError{exitTool, errors.New("")}

type streams struct {
	in       io.Reader
	out, err io.Writer
	args     []string // the command line, for a hand-over to toolgate-agent
	opts     Options
}

func run(ctx context.Context, args []string, in io.Reader, out, errOut io.Writer, o Options) int {
	s := &streams{in, out, errOut, args, o}
	root := newRoot(s)
	root.SetArgs(args)
	root.SetIn(in)
	root.SetOut(out)
	root.SetErr(errOut)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err.Error() != "" {
			fmt.Fprintln(errOut, "toolgate:", ee.err)
		}
		return ee.code
	}
	// Cobra's own errors are about flags and arguments.
	fmt.Fprintln(errOut, "toolgate:", err)
	fmt.Fprintln(errOut, "Run 'toolgate --help' for usage.")
	return exitUsage
}

func newRoot(s *streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "toolgate",
		Short: "The tool layer for LLM agents: define, execute and govern tool calls",
		Long: `toolgate defines tools so a model understands them, executes the calls a model
makes, and governs them: every call passes one pipeline of argument checks,
policy, limits and a tamper-evident audit log, whoever makes it.

Built-in file tools work on the folders given with --root (default: the
current folder) and never outside them.`,
		Example: `  toolgate tools                                   # what a model may call here
  toolgate call list_directory '{"path":"."}'      # one governed call, JSON out
  toolgate audit verify                            # check the audit log's hash chain`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newToolsCmd(s), newCallCmd(s), newAuditCmd(s), newVersionCmd(s), newServeCmd(s), newLintCmd(s), newProxyCmd(s), newPolicyCmd(s), newPlanCmd(s), newSearchCmd(s), newRunCmd(s), newTrustCmd(s))
	root.AddCommand(newScanCmd(s))
	return root
}
