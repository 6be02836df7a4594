package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/metric"

	"github.com/toolgate/toolgate/orchestrate"
	"github.com/toolgate/toolgate/selection"
	"github.com/toolgate/toolgate/tool"
)

func newSearchCmd(s *streams) *cobra.Command {
	var c common
	var toolsFile, queriesFile, embURL, embModel string
	var usageFiles, usageFrom []string
	var halfLife time.Duration
	var k int
	var asJSON, explain, report bool
	cmd := &cobra.Command{
		Use:   "search [QUERY] | --report [AUDIT]...",
		Short: "Find the tools that fit a request (the index behind tool_search)",
		Long: `Rank tools against a request with toolgate's selection index (BM25F over
names, descriptions and parameters, with stemming and generic synonyms) and
print the best K, best first.

The tools are the built-in ones (--root), or those of --tools FILE: a JSON
array of MCP-shaped tools {name, description, inputSchema} (what
'toolgate tools --format mcp' prints, or an MCP server's tools/list result).

Batch mode (--queries FILE.jsonl, no QUERY) reads JSON Lines {"id":…,
"query":…} and prints one JSON line {"id":…, "tools":[names, best first]}
per query, ids as given.

Learning from use (--usage FILE.jsonl, repeatable): records {"query":…,
"tool":…, "principal":…, "time":"RFC 3339, optional"} say which tool a
caller called after searching for a query. What they teach is added to the
text score: each tool's document grows the words of the queries that led
to it, a principal counts at most once per word and tool, and the strongest
principal behind each word is left out once two or more taught anything,
so one caller cannot steer the others' ranking. Records age (--half-life,
30 days). Without records the ranking is exactly the one without
--usage. --explain shows, per result, the score from text, the score from
use and the principals behind it (docs/selection.md). --usage-from reads
the same records from audit logs (files, or folders of them): the calls
that followed a tool_search in serve or proxy.

--report [AUDIT]... (default: the audit log) prints, per week and per
upstream, how often the tool a caller called after a tool_search had been
ranked first, in the top 5, or not found by that search.

With --embeddings-url (an OpenAI-compatible /v1 base URL) and
--embeddings-model, the ranking fuses the index with embedding similarity
(reciprocal rank fusion); the key is read from $TOOLGATE_EMBEDDINGS_KEY and
vectors are cached in the state folder.`,
		Example: `  toolgate search "resize a picture" -k 3
  toolgate search "create a github issue" --tools tools.json --json
  toolgate search --tools tools.json --queries queries.jsonl -k 10
  toolgate search --tools tools.json --usage usage.jsonl --queries queries.jsonl -k 10
  toolgate search "convert currencies" --tools tools.json --usage usage.jsonl --explain
  toolgate search --tools tools.json --usage-from /var/log/toolgate/ --queries q.jsonl
  toolgate search --report /var/log/toolgate/`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if report {
				if len(args) == 0 {
					args = []string{defaultAuditPath()}
				}
				return searchReport(s, args, asJSON)
			}
			if len(args) > 1 {
				return usageErr("one QUERY at a time (quote it); --queries FILE for many")
			}
			if k <= 0 {
				return usageErr("-k %d: want a positive number", k)
			}
			if (len(args) == 1) == (queriesFile != "") {
				return usageErr("give either a QUERY or --queries FILE")
			}
			defs, err := searchDefinitions(&c, toolsFile)
			if err != nil {
				return err
			}
			var records []selection.Usage
			for _, f := range usageFiles {
				rs, err := readUsage(f)
				if err != nil {
					return err
				}
				records = append(records, rs...)
			}
			if len(usageFrom) > 0 {
				rs, err := usageFromAudit(usageFrom)
				if err != nil {
					return err
				}
				records = append(records, rs...)
			}
			if (len(usageFiles) > 0 || len(usageFrom) > 0 || explain) && embURL != "" {
				return usageErr("--usage and --explain rank with the lexical index: leave out --embeddings-url")
			}
			rank, err := ranker(cmd.Context(), defs, embURL, embModel, records, selection.LearnOptions{HalfLife: halfLife})
			if err != nil {
				return err
			}
			if queriesFile != "" {
				return batchSearch(s, rank, queriesFile, k, explain)
			}
			ms, err := rank(args[0], k)
			if err != nil {
				return &exitError{exitTool, err}
			}
			if asJSON {
				out := map[string]any{"query": args[0], "tools": matchNames(ms)}
				if explain {
					out["explain"] = explained(ms)
				}
				return printJSON(s, out)
			}
			w := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
			if explain {
				fmt.Fprintln(w, "RANK\tNAME\tSCORE\tTEXT\tUSE\tPRINCIPALS\tDESCRIPTION")
				for i, m := range ms {
					fmt.Fprintf(w, "%d\t%s\t%.3f\t%.3f\t%.3f\t%d\t%s\n", i+1, m.Name, m.Score, m.Text, m.Use, len(m.Principals), summary(defs[m.Index].Description))
				}
				return w.Flush()
			}
			fmt.Fprintln(w, "RANK\tNAME\tSCORE\tDESCRIPTION")
			for i, m := range ms {
				fmt.Fprintf(w, "%d\t%s\t%.3f\t%s\n", i+1, m.Name, m.Score, summary(defs[m.Index].Description))
			}
			return w.Flush()
		},
	}
	c.register(cmd)
	f := cmd.Flags()
	f.StringVar(&toolsFile, "tools", "", "JSON array of MCP-shaped tools to search instead of the built-in ones")
	f.StringVar(&queriesFile, "queries", "", "JSON Lines of {\"id\",\"query\"}: batch mode, JSON Lines out")
	f.IntVarP(&k, "k", "k", 5, "how many tools to print per query")
	f.BoolVar(&asJSON, "json", false, "print {\"query\",\"tools\":[names]} instead of a table")
	f.StringArrayVar(&usageFiles, "usage", nil, "JSON Lines of usage records {\"query\",\"tool\",\"principal\",\"time\"} to learn from (repeatable)")
	f.StringArrayVar(&usageFrom, "usage-from", nil, "audit log (file or folder) whose tool_search-then-call records to learn from (repeatable)")
	f.BoolVar(&report, "report", false, "print how well tool_search ranked the tools called after it, per week and upstream, from the audit logs given as arguments")
	f.DurationVar(&halfLife, "half-life", selection.DefaultHalfLife, "how fast usage records age: a record's weight halves every this long")
	f.BoolVar(&explain, "explain", false, "show per result the score from text and from use, and how many principals taught it")
	f.StringVar(&embURL, "embeddings-url", "", "OpenAI-compatible base URL (…/v1) for hybrid ranking with embeddings")
	f.StringVar(&embModel, "embeddings-model", "", "embedding model name (with --embeddings-url)")
	return cmd
}

// rankFunc returns the best k matches of a query, explained.
type rankFunc func(query string, k int) ([]selection.Explanation, error)

// ranker is the lexical index (with what records teach it), or the hybrid
// one when an endpoint is given.
func ranker(ctx context.Context, defs []tool.Definition, url, model string, records []selection.Usage, lo selection.LearnOptions) (rankFunc, error) {
	if url == "" {
		if model != "" {
			return nil, usageErr("--embeddings-model needs --embeddings-url")
		}
		idx := selection.New(defs, selection.Options{})
		var l *selection.Learned
		if len(records) > 0 {
			l = idx.Learn(defs, records, lo)
		}
		return func(q string, k int) ([]selection.Explanation, error) { return idx.Explain(q, k, l), nil }, nil
	}
	if model == "" {
		return nil, usageErr("--embeddings-url needs --embeddings-model")
	}
	emb := &selection.Embedder{BaseURL: url, Model: model, APIKey: os.Getenv("TOOLGATE_EMBEDDINGS_KEY"), CacheDir: filepath.Join(stateDir(), "embeddings")}
	h, err := selection.NewHybrid(ctx, defs, selection.Options{}, emb)
	if err != nil {
		return nil, &exitError{exitTool, err}
	}
	return func(q string, k int) ([]selection.Explanation, error) {
		ms, err := h.Select(ctx, q, k)
		out := make([]selection.Explanation, len(ms))
		for i, m := range ms {
			out[i] = selection.Explanation{Match: m, Text: m.Score}
		}
		return out, err
	}, nil
}

func matchNames(ms []selection.Explanation) []string {
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.Name
	}
	return names
}

// searchExplained is one result of --explain in JSON.
type searchExplained struct {
	Name       string  `json:"name"`
	Score      float64 `json:"score"`
	Text       float64 `json:"text"`
	Use        float64 `json:"use"`
	Principals int     `json:"principals"`
}

func explained(ms []selection.Explanation) []searchExplained {
	out := make([]searchExplained, len(ms))
	for i, m := range ms {
		out[i] = searchExplained{m.Name, m.Score, m.Text, m.Use, len(m.Principals)}
	}
	return out
}

// readUsage reads a JSON Lines file of usage records.
func readUsage(file string) ([]selection.Usage, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, usageErr("--usage: %v", err)
	}
	defer f.Close()
	var out []selection.Usage
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var u selection.Usage
		if err := json.Unmarshal(line, &u); err != nil || u.Query == "" || u.Tool == "" {
			return nil, usageErr("--usage %s line %d: want {\"query\":\"…\", \"tool\":\"NAME\", \"principal\":\"…\", \"time\":\"RFC 3339\"} (time optional)", file, n)
		}
		out = append(out, u)
	}
	if err := sc.Err(); err != nil {
		return nil, usageErr("--usage %s: %v", file, err)
	}
	return out, nil
}

// searchDefinitions reads a tools file, or lists the built-in tools.
func searchDefinitions(c *common, file string) ([]tool.Definition, error) {
	if file == "" {
		sets, err := builtinTools(c)
		if err != nil {
			return nil, err
		}
		defer sets.Close()
		defs := make([]tool.Definition, len(sets.tools))
		for i, t := range sets.tools {
			defs[i] = t.Definition()
		}
		return defs, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, usageErr("--tools: %v", err)
	}
	var list []struct {
		Name        string          `json:"name"`
		Title       string          `json:"title"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		// An MCP tools/list result holds the array under "tools".
		var wrapped struct {
			Tools json.RawMessage `json:"tools"`
		}
		if json.Unmarshal(data, &wrapped) != nil || json.Unmarshal(wrapped.Tools, &list) != nil {
			return nil, usageErr("--tools %s: want a JSON array of {name, description, inputSchema}: %v", file, err)
		}
	}
	defs := make([]tool.Definition, 0, len(list))
	for i, t := range list {
		if t.Name == "" {
			return nil, usageErr("--tools %s: tool %d has no name", file, i)
		}
		defs = append(defs, tool.Definition{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema})
	}
	return defs, nil
}

// batchSearch answers a JSON Lines file of queries.
func batchSearch(s *streams, rank rankFunc, file string, k int, explain bool) error {
	f, err := os.Open(file)
	if err != nil {
		return usageErr("--queries: %v", err)
	}
	defer f.Close()
	out := bufio.NewWriter(s.out)
	defer out.Flush()
	br := bufio.NewReaderSize(f, 64<<10)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var q struct {
				ID    json.RawMessage `json:"id"`
				Query *string         `json:"query"`
			}
			if jerr := json.Unmarshal(line, &q); jerr != nil || q.Query == nil {
				return usageErr("--queries %s line %d: want {\"id\":…, \"query\":\"…\"}", file, n)
			}
			ms, rerr := rank(*q.Query, k)
			if rerr != nil {
				return &exitError{exitTool, fmt.Errorf("line %d: %w", n, rerr)}
			}
			id := q.ID
			if id == nil {
				id = json.RawMessage("null")
			}
			line := struct {
				ID      json.RawMessage   `json:"id"`
				Tools   []string          `json:"tools"`
				Explain []searchExplained `json:"explain,omitempty"`
			}{ID: id, Tools: matchNames(ms)}
			if explain {
				line.Explain = explained(ms)
			}
			b, _ := json.Marshal(line)
			out.Write(append(b, '\n'))
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return usageErr("--queries: %v", err)
		}
	}
}

// summary is the first sentence or line of a description, for a table.
func summary(desc string) string {
	desc = strings.TrimSpace(desc)
	if i := strings.IndexAny(desc, "\n"); i >= 0 {
		desc = desc[:i]
	}
	if i := strings.Index(desc, ". "); i >= 0 {
		desc = desc[:i+1]
	}
	if len(desc) > 100 {
		desc = desc[:97] + "..."
	}
	return desc
}

// deferTools hides every tool but run_plan behind tool_search (serve
// --defer-tools): a client lists only tool_search and run_plan until a
// search loads what it needs, which the MCP server announces with
// notifications/tools/list_changed. tool_search learns from the calls that
// follow it unless the policy says selection.learn: false.
func (s *setup) deferTools(mp metric.MeterProvider, log *slog.Logger) error {
	o := selection.DeferOptions{Keep: []string{orchestrate.RunPlanName}, Visible: s.engine.Visible}
	if s.learn != nil {
		l, closer := learning(s.policy, s.redis, mp, s.learn.next, noUpstream, log)
		if closer != nil {
			s.closers = append(s.closers, closer)
		}
		if l != nil {
			pol := s.policy
			l.Boost = func(def tool.Definition, call tool.Call) bool { return !pol.Hides(def, call) }
			o.Learn = l
		}
	}
	d, err := selection.Defer(s.registry, o)
	if err != nil {
		return err
	}
	s.closers = append(s.closers, func() error { d.Close(); return nil })
	if s.learn != nil && o.Learn != nil {
		s.learn.d.Store(d)
	}
	return s.registry.Register(d.Tool())
}
