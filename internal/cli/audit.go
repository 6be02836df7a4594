package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolgate/toolgate/audit"
)

func newAuditCmd(s *streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Check and read the audit log",
		Long: `The audit log holds one JSON line per call, allowed or not, each carrying the
sha256 hash of the one before it. FILE defaults to the log the other commands
write ($TOOLGATE_AUDIT, else ~/.local/state/toolgate/audit.jsonl).`,
		Example: `  toolgate audit verify
  toolgate audit tail -n 20
  toolgate audit query --tool write_file --outcome denied --since 1h`,
	}
	cmd.AddCommand(newAuditVerifyCmd(s), newAuditTailCmd(s), newAuditQueryCmd(s))
	return cmd
}

func auditFile(args []string) (*os.File, error) {
	path := defaultAuditPath()
	if len(args) > 0 {
		path = args[0]
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, &exitError{exitTool, fmt.Errorf("%w (give the log's path as an argument)", err)}
	}
	return f, nil
}

func newAuditVerifyCmd(s *streams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify [FILE]",
		Short: "Check the hash chain; name the first modified, removed, inserted or reordered record",
		Long: `Verify reads the whole log and checks that every record's hash matches its
content and links to the record before. It names each problem with its line
number. A torn last line (a crash while writing) is reported as a warning and
does not hide the rest. Exit status 0: intact (warnings allowed); 1: a record
was modified, removed, inserted or reordered, or a line is not a record.`,
		Example: `  toolgate audit verify
  toolgate audit verify --json /var/log/toolgate/audit.jsonl`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			f, err := auditFile(args)
			if err != nil {
				return err
			}
			defer f.Close()
			rep, err := audit.Verify(f)
			if err != nil {
				return &exitError{exitTool, err}
			}
			if asJSON {
				if err := printJSON(s, rep); err != nil {
					return err
				}
			} else {
				printReport(s, f.Name(), rep)
			}
			if tampered(rep) {
				return failed
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

// tampered reports whether rep has a problem that is not a mere warning.
func tampered(rep audit.Report) bool {
	for _, p := range rep.Problems {
		if !p.Warning {
			return true
		}
	}
	return rep.Omitted > 0
}

func printReport(s *streams, name string, rep audit.Report) {
	if rep.OK {
		fmt.Fprintf(s.out, "%s: OK, %d records, head %s\n", name, rep.Records, rep.Head)
		return
	}
	fmt.Fprintf(s.out, "%s: %d records, %d problem(s)\n", name, rep.Records, len(rep.Problems)+rep.Omitted)
	for _, p := range rep.Problems {
		sev := "error"
		if p.Warning {
			sev = "warning"
		}
		fmt.Fprintf(s.out, "  line %d: %s (%s): %s\n", p.Line, p.Kind, sev, p.Message)
	}
	if rep.Omitted > 0 {
		fmt.Fprintf(s.out, "  … and %d more\n", rep.Omitted)
	}
}

func newAuditTailCmd(s *streams) *cobra.Command {
	var n int
	cmd := &cobra.Command{
		Use:     "tail [FILE]",
		Short:   "Print the last records as JSON Lines",
		Example: "  toolgate audit tail -n 20 | jq -c '{tool, outcome, rule}'",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if n <= 0 {
				return usageErr("-n must be at least 1")
			}
			f, err := auditFile(args)
			if err != nil {
				return err
			}
			defer f.Close()
			recs, err := audit.Tail(f, n)
			if err != nil {
				return &exitError{exitTool, err}
			}
			return printLines(s, recs)
		},
	}
	cmd.Flags().IntVarP(&n, "lines", "n", 10, "how many records")
	return cmd
}

func newAuditQueryCmd(s *streams) *cobra.Command {
	var q audit.Query
	var since string
	cmd := &cobra.Command{
		Use:   "query [FILE]",
		Short: "Print the records that match filters, as JSON Lines",
		Long: `Print the records that match every filter given, oldest first. --since takes a
duration back from now (30m, 24h) or an RFC 3339 time. Query does not check
hashes; run verify for that.`,
		Example: `  toolgate audit query --outcome denied --since 24h
  toolgate audit query --tool execute_command --session s42 --limit 5`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if since != "" {
				if d, err := time.ParseDuration(since); err == nil {
					q.Since = time.Now().Add(-d)
				} else if t, err := time.Parse(time.RFC3339, since); err == nil {
					q.Since = t
				} else {
					return usageErr("--since %q: want a duration like 24h or an RFC 3339 time", since)
				}
			}
			f, err := auditFile(args)
			if err != nil {
				return err
			}
			defer f.Close()
			recs, err := audit.Select(f, q)
			if err != nil {
				return &exitError{exitTool, err}
			}
			return printLines(s, recs)
		},
	}
	f := cmd.Flags()
	f.StringVar(&q.Tool, "tool", "", "only this tool")
	f.StringVar(&q.Session, "session", "", "only this session")
	f.StringVar(&q.Principal, "principal", "", "only this principal")
	f.StringVar(&q.Decision, "decision", "", "only this decision (allow, deny, ask)")
	f.StringVar(&q.Outcome, "outcome", "", "only this outcome (ok, error, denied, invalid, limited)")
	f.StringVar(&since, "since", "", "only records newer than this (duration or RFC 3339 time)")
	f.IntVar(&q.Limit, "limit", 0, "only the last N matches (0: all)")
	return cmd
}

func printLines(s *streams, recs []audit.Record) error {
	enc := json.NewEncoder(s.out)
	enc.SetEscapeHTML(false)
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}
