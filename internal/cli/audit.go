package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
write ($TOOLGATE_AUDIT, else ~/.local/state/toolgate/audit.jsonl).

Several replicas each keep their own log (--audit DIR/ writes
DIR/audit-REPLICA.jsonl, REPLICA being $TOOLGATE_REPLICA or the host name).
Every subcommand takes several files, or a folder for all the *.jsonl files
in it: verify checks each chain on its own, tail and query merge the records
of all of them by time.`,
		Example: `  toolgate audit verify
  toolgate audit verify /var/log/toolgate/          # every replica's log
  toolgate audit tail -n 20 /var/log/toolgate/
  toolgate audit query --tool write_file --outcome denied --since 1h`,
	}
	cmd.AddCommand(newAuditVerifyCmd(s), newAuditTailCmd(s), newAuditQueryCmd(s))
	return cmd
}

// auditFiles are the logs that args name: files as given, and for a folder
// every *.jsonl file in it (sorted); no args: the default log (or every
// log of its folder, when $TOOLGATE_AUDIT names one).
func auditFiles(args []string) ([]string, error) {
	if len(args) == 0 {
		args = []string{defaultAuditPath()}
	}
	var out []string
	for _, a := range args {
		fi, err := os.Stat(a)
		if err != nil {
			return nil, &exitError{exitTool, fmt.Errorf("%w (give the log's path, or the folder of the replicas' logs, as an argument)", err)}
		}
		if !fi.IsDir() {
			out = append(out, a)
			continue
		}
		logs, err := filepath.Glob(filepath.Join(a, "*.jsonl"))
		if err != nil || len(logs) == 0 {
			return nil, &exitError{exitTool, fmt.Errorf("%s holds no audit log (no *.jsonl file)", a)}
		}
		out = append(out, logs...) // Glob sorts
	}
	return out, nil
}

// eachAuditFile calls fn with each log that args name, open.
func eachAuditFile(args []string, fn func(*os.File) error) error {
	paths, err := auditFiles(args)
	if err != nil {
		return err
	}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return &exitError{exitTool, err}
		}
		err = fn(f)
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// printMerged prints the records read from each log that args name,
// merged oldest first (stable: records of one time keep their file's
// order), the last n of them (0: all).
func printMerged(s *streams, args []string, n int, read func(*os.File) ([]audit.Record, error)) error {
	var all []audit.Record
	err := eachAuditFile(args, func(f *os.File) error {
		recs, err := read(f)
		if err != nil {
			return &exitError{exitTool, fmt.Errorf("%s: %w", f.Name(), err)}
		}
		all = append(all, recs...)
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortStableFunc(all, func(a, b audit.Record) int { return a.Time.Compare(b.Time) })
	if n > 0 && len(all) > n {
		all = all[len(all)-n:]
	}
	return printLines(s, all)
}

func newAuditVerifyCmd(s *streams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify [FILE|DIR]...",
		Short: "Check the hash chain; name the first modified, removed, inserted or reordered record",
		Long: `Verify reads the whole log and checks that every record's hash matches its
content and links to the record before. It names each problem with its line
number. A torn last line (a crash while writing) is reported as a warning and
does not hide the rest. Each file is a chain of its own (one per replica).
Exit status 0: every log intact (warnings allowed); 1: in some log a record
was modified, removed, inserted or reordered, or a line is not a record.
--json prints one report per line (JSON Lines), each naming its file.`,
		Example: `  toolgate audit verify
  toolgate audit verify --json /var/log/toolgate/audit.jsonl
  toolgate audit verify /var/log/toolgate/          # every *.jsonl in the folder`,
		Args: cobra.ArbitraryArgs,
		RunE: func(_ *cobra.Command, args []string) error {
			bad := false
			err := eachAuditFile(args, func(f *os.File) error {
				rep, err := audit.Verify(f)
				if err != nil {
					return &exitError{exitTool, err}
				}
				bad = bad || tampered(rep)
				if asJSON {
					return json.NewEncoder(s.out).Encode(fileReport{f.Name(), rep})
				}
				printReport(s, f.Name(), rep)
				return nil
			})
			if err == nil && bad {
				return failed
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

// fileReport is verify --json's line: a log and what Verify found in it.
type fileReport struct {
	File string `json:"file"`
	audit.Report
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
		Use:   "tail [FILE|DIR]...",
		Short: "Print the last records as JSON Lines (of several logs: merged by time)",
		Example: `  toolgate audit tail -n 20 | jq -c '{tool, outcome, rule}'
  toolgate audit tail -n 50 /var/log/toolgate/     # the replicas' logs, merged`,
		Args: cobra.ArbitraryArgs,
		RunE: func(_ *cobra.Command, args []string) error {
			if n <= 0 {
				return usageErr("-n must be at least 1")
			}
			return printMerged(s, args, n, func(f *os.File) ([]audit.Record, error) { return audit.Tail(f, n) })
		},
	}
	cmd.Flags().IntVarP(&n, "lines", "n", 10, "how many records")
	return cmd
}

func newAuditQueryCmd(s *streams) *cobra.Command {
	var q audit.Query
	var since string
	cmd := &cobra.Command{
		Use:   "query [FILE|DIR]...",
		Short: "Print the records that match filters, as JSON Lines (of several logs: merged by time)",
		Long: `Print the records that match every filter given, oldest first; the records of
several logs (the replicas') are merged by time. --since takes a duration back
from now (30m, 24h) or an RFC 3339 time. Query does not check hashes; run
verify for that.`,
		Example: `  toolgate audit query --outcome denied --since 24h
  toolgate audit query --tool execute_command --session s42 --limit 5`,
		Args: cobra.ArbitraryArgs,
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
			return printMerged(s, args, q.Limit, func(f *os.File) ([]audit.Record, error) { return audit.Select(f, q) })
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
