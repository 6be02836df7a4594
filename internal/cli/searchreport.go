package cli

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/console"
	"github.com/toolgate/toolgate/selection"
)

// hitRecords reads the learned pairs (selection:TOOL records) of the audit
// logs paths name (files, or folders of *.jsonl), oldest first.
func hitRecords(paths []string) ([]audit.Record, error) {
	var out []audit.Record
	err := eachAuditFile(paths, func(f *os.File) error {
		recs, err := audit.Select(f, audit.Query{})
		if err != nil {
			return &exitError{exitTool, fmt.Errorf("%s: %w", f.Name(), err)}
		}
		for _, r := range recs {
			if strings.HasPrefix(r.Tool, hitPrefix) && len(r.Tool) > len(hitPrefix) {
				out = append(out, r)
			}
		}
		return nil
	})
	slices.SortStableFunc(out, func(a, b audit.Record) int { return a.Time.Compare(b.Time) })
	return out, err
}

// usageFromAudit turns the learned pairs of audit logs into usage records.
func usageFromAudit(paths []string) ([]selection.Usage, error) {
	recs, err := hitRecords(paths)
	if err != nil {
		return nil, err
	}
	var out []selection.Usage
	for _, r := range recs {
		var a hitArgs
		if json.Unmarshal(r.Arguments, &a) != nil || a.Query == "" {
			continue // a query too long for the log is a digest: it teaches nothing
		}
		out = append(out, selection.Usage{Query: a.Query, Tool: strings.TrimPrefix(r.Tool, hitPrefix), Principal: r.Principal, Time: r.Time, Definition: a.Definition})
	}
	return out, nil
}

// reportRow is one line of toolgate search --report (percentages; top 5
// includes first).
type reportRow = console.SelectionRow

// searchReport prints, per week and per upstream, how the tool_search
// before each learned call had ranked the tool called.
func searchReport(s *streams, paths []string, asJSON bool) error {
	recs, err := hitRecords(paths)
	if err != nil {
		return err
	}
	rows := reportRows(recs)
	if asJSON {
		enc := json.NewEncoder(s.out)
		for _, r := range rows {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	if len(rows) == 0 {
		fmt.Fprintln(s.out, "no call followed a tool_search in these logs (tool_search records its learned calls as selection:TOOL)")
		return nil
	}
	w := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "WEEK\tUPSTREAM\tCALLS\tFIRST\tTOP 5\tNOT FOUND")
	for _, r := range rows {
		up := r.Upstream
		if up == "" {
			up = "(built-in)"
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%.1f%%\t%.1f%%\t%.1f%%\n", r.Week, up, r.Calls, r.First, r.Top5, r.NotFound)
	}
	return w.Flush()
}

// reportRows counts learned pairs per ISO week and upstream.
func reportRows(recs []audit.Record) []reportRow {
	type key struct{ week, upstream string }
	type count struct{ calls, first, top5, missing int }
	counts := map[key]*count{}
	for _, r := range recs {
		var a hitArgs
		json.Unmarshal(r.Arguments, &a)
		y, w := r.Time.ISOWeek()
		k := key{fmt.Sprintf("%d-W%02d", y, w), a.Upstream}
		c := counts[k]
		if c == nil {
			c = &count{}
			counts[k] = c
		}
		c.calls++
		switch {
		case a.Rank == 1:
			c.first++
			c.top5++
		case a.Rank >= 2 && a.Rank <= 5:
			c.top5++
		case a.Rank <= 0:
			c.missing++
		}
	}
	rows := make([]reportRow, 0, len(counts))
	for k, c := range counts {
		pct := func(n int) float64 { return float64(int(1000*float64(n)/float64(c.calls)+0.5)) / 10 }
		rows = append(rows, reportRow{Week: k.week, Upstream: k.upstream, Calls: c.calls, First: pct(c.first), Top5: pct(c.top5), NotFound: pct(c.missing)})
	}
	slices.SortFunc(rows, func(a, b reportRow) int {
		return cmp.Or(cmp.Compare(a.Week, b.Week), cmp.Compare(a.Upstream, b.Upstream))
	})
	return rows
}
