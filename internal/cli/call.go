package cli

import (
	"encoding/json"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/tool"
	"github.com/toolgate/toolgate/toolsets/exec"
)

func newCallCmd(s *streams) *cobra.Command {
	var c common
	var yes approval
	var session, principal, idemKey string
	cmd := &cobra.Command{
		Use:   "call TOOL [ARGS_JSON]",
		Short: "Run one governed tool call and print its result as JSON",
		Long: `Run one call through the governed pipeline (arguments, validation, policy,
limits, run, output budget, audit) and print the result as one JSON object:

  {"content":[…],"structured":…,"is_error":bool,"error":{"type","message","retryable","suggestion",…},"meta":{…}}

ARGS_JSON is a JSON object (default {}); "-" reads it from standard input.
Calls that the policy asks about (level 2 and 3 tools by default) are put to
you on the terminal, or approved by --yes; without a terminal (a script, a
pipe) they are refused. A command the dangerous-command check flags (git
reset --hard, rm -r of a computed path, code that removes folders) is not
covered by --yes alone: a person approves it, or --allow-dangerous is added.

Exit status: 0 success, 1 the tool returned an error, 2 usage error.`,
		Example: `  toolgate call read_file '{"path":"README.md","limit":20}'
  toolgate call search_files '{"pattern":"func main"}' --root ./src
  echo '{"path":"notes.txt","content":"hi"}' | toolgate call write_file -
  toolgate call write_file '{"path":"a.txt","content":"x"}' --idempotency-key deploy-42`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var raw []byte
			if len(args) == 2 {
				raw = []byte(args[1])
				if args[1] == "-" {
					b, err := io.ReadAll(io.LimitReader(s.in, 64<<20))
					if err != nil {
						return usageErr("reading arguments from stdin: %v", err)
					}
					raw = b
				}
			}
			approver, err := yes.approver(s, args[len(args)-1] != "-")
			if err != nil {
				return err
			}
			opts := engine.Options{Approver: approver}
			c.results = idemKey != ""
			c.command = args[0] == exec.ExecuteCommand || args[0] == exec.RunCode
			st, err := c.build(opts)
			if err != nil {
				return err
			}
			defer st.Close()
			if principal == "" {
				principal = os.Getenv("USER")
			}
			res := st.engine.Execute(cmd.Context(), tool.Call{Name: args[0], Args: json.RawMessage(raw), Session: session, Principal: principal, IdempotencyKey: idemKey})
			return printResult(s, res)
		},
	}
	c.register(cmd)
	c.registerComposites(cmd)
	f := cmd.Flags()
	yes.register(cmd)
	f.StringVar(&session, "session", "", "session id recorded in the audit log")
	f.StringVar(&principal, "principal", "", "who is calling, for policy and audit (default: $USER)")
	f.StringVar(&idemKey, "idempotency-key", "", "run at most once per key: a retry with the same key prints the first result (kept 24 h in the state folder)")
	return cmd
}
