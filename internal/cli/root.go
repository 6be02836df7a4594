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
	return execute(ctx, newRoot(s, args), s)
}

// execute runs root on s's command line and returns the exit status.
func execute(ctx context.Context, root *cobra.Command, s *streams) int {
	errOut := s.err
	root.SetArgs(s.args)
	root.SetIn(s.in)
	root.SetOut(s.out)
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

// commands are the subcommands, by name: newRoot makes only the one a
// command line names.
var commands = []struct {
	name string
	make func(*streams) *cobra.Command
}{
	{"tools", newToolsCmd}, {"call", newCallCmd}, {"audit", newAuditCmd}, {"version", newVersionCmd},
	{"serve", newServeCmd}, {"lint", newLintCmd}, {"proxy", newProxyCmd}, {"policy", newPolicyCmd},
	{"plan", newPlanCmd}, {"search", newSearchCmd}, {"run", newRunCmd}, {"trust", newTrustCmd}, {"scan", newScanCmd},
	{"auth", newAuthCmd}, {"runner", newRunnerCmd},
}

// newRoot makes the root command with the subcommand args[0] names, or
// with all of them (the root's help, help and completion, a flag or an
// unknown name first, which cobra answers with the closest names): a
// command's flags and texts cost every process, and one runs only its own.
func newRoot(s *streams, args []string) *cobra.Command {
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
	for _, c := range commands {
		if len(args) > 0 && args[0] == c.name {
			root.AddCommand(c.make(s))
			root.CompletionOptions.DisableDefaultCmd = true // `completion` is not the command named
			return root
		}
	}
	for _, c := range commands {
		root.AddCommand(c.make(s))
	}
	return root
}
