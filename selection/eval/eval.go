package eval

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/toolgate/toolgate/tool"
)

// Tool is one tool of a benchmark corpus.
type Tool struct {
	ID         string          // "<server>::<tool name>"
	Server     string          // the server key the tool belongs to
	Definition tool.Definition // name, description and input schema as published
}

// Task is one benchmark query with the tool names a human used to solve it.
type Task struct {
	ID    string
	Query string
	Gold  []string // distinct tool names, in the annotator's order
}

// Bench is a retrieval benchmark: a tool corpus and tasks over it.
type Bench struct {
	Tools []Tool
	Tasks []Task // only tasks that keep at least one gold tool
}

// Definitions returns the definitions of b's tools, in corpus order.
func (b *Bench) Definitions() []tool.Definition {
	defs := make([]tool.Definition, len(b.Tools))
	for i, t := range b.Tools {
		defs[i] = t.Definition
	}
	return defs
}

// livemcpServer is the shape of one entry of LiveMCPBench's tools.json.
type livemcpServer struct {
	Name  string `json:"name"`
	Tools map[string]struct {
		Tools []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	} `json:"tools"`
}

// livemcpTask is the shape of one entry of LiveMCPBench's all_annotations.json.
type livemcpTask struct {
	TaskID   string `json:"task_id"`
	Question string `json:"Question"`
	Meta     struct {
		Tools string `json:"Tools"`
	} `json:"Annotator Metadata"`
}

var goldPrefix = regexp.MustCompile(`^\s*\d+\.\s*`)

// LoadLiveMCPBench reads LiveMCPBench's tools.json and all_annotations.json
// from dir, following the recipe of the shared data README: every
// tools[*].tools[<key>].tools[*] is a tool with id "<server>::<name>" (server
// is the key); the queries are the Question strings; the gold tools of a task
// are the lines of "Annotator Metadata".Tools without their "<n>. " prefix
// that equal a tool name. Tasks left without gold are dropped.
func LoadLiveMCPBench(dir string) (*Bench, error) {
	var servers []livemcpServer
	if err := readJSON(filepath.Join(dir, "tools.json"), &servers); err != nil {
		return nil, err
	}
	var tasks []livemcpTask
	if err := readJSON(filepath.Join(dir, "all_annotations.json"), &tasks); err != nil {
		return nil, err
	}
	b := &Bench{}
	names := map[string]bool{}
	for _, s := range servers {
		keys := make([]string, 0, len(s.Tools))
		for k := range s.Tools {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			for _, t := range s.Tools[k].Tools {
				b.Tools = append(b.Tools, Tool{
					ID:     k + "::" + t.Name,
					Server: k,
					Definition: tool.Definition{
						Name:        t.Name,
						Description: t.Description,
						InputSchema: t.InputSchema,
					},
				})
				names[t.Name] = true
			}
		}
	}
	for i, t := range tasks {
		task := Task{ID: t.TaskID, Query: t.Question}
		if task.ID == "" {
			task.ID = fmt.Sprint(i)
		}
		seen := map[string]bool{}
		for _, line := range strings.Split(t.Meta.Tools, "\n") {
			name := strings.TrimSpace(goldPrefix.ReplaceAllString(line, ""))
			if names[name] && !seen[name] {
				seen[name] = true
				task.Gold = append(task.Gold, name)
			}
		}
		if len(task.Gold) > 0 {
			b.Tasks = append(b.Tasks, task)
		}
	}
	if len(b.Tools) == 0 || len(b.Tasks) == 0 {
		return nil, fmt.Errorf("livemcpbench in %s: %d tools and %d tasks with gold; want some of each", dir, len(b.Tools), len(b.Tasks))
	}
	return b, nil
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("livemcpbench: %w", err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("livemcpbench: %s: %w", path, err)
	}
	return nil
}

// Metrics are the mean retrieval scores over a benchmark's tasks, as
// percentages (0–100).
type Metrics struct {
	Tasks      int     // tasks scored
	Recall5    float64 // share of a task's gold tools among the first 5 results
	Recall10   float64 // share of a task's gold tools among the first 10 results
	NDCG10     float64 // binary-gain nDCG over the first 10 results
	Complete10 float64 // share of tasks whose gold tools are all among the first 10
}

func (m Metrics) String() string {
	return fmt.Sprintf("R@5 %.1f  R@10 %.1f  nDCG@10 %.1f  complete@10 %.1f  (%d tasks)",
		m.Recall5, m.Recall10, m.NDCG10, m.Complete10, m.Tasks)
}

// Score runs rank on every task's query and scores the tool names it
// returns, best first, against the gold at tool-name level: the ranking is
// the list of distinct names, each at its first position, whichever server
// it came from; so rank should return more than 10 names when names repeat.
func (b *Bench) Score(rank func(query string) []string) Metrics {
	var m Metrics
	for _, t := range b.Tasks {
		r5, r10, ndcg, complete := scoreTask(rank(t.Query), t.Gold)
		m.Recall5 += r5
		m.Recall10 += r10
		m.NDCG10 += ndcg
		if complete {
			m.Complete10++
		}
		m.Tasks++
	}
	if m.Tasks > 0 {
		n := float64(m.Tasks)
		m.Recall5 = 100 * m.Recall5 / n
		m.Recall10 = 100 * m.Recall10 / n
		m.NDCG10 = 100 * m.NDCG10 / n
		m.Complete10 = 100 * m.Complete10 / n
	}
	return m
}

// scoreTask scores one ranking of tool names against distinct gold names.
func scoreTask(ranked, gold []string) (r5, r10, ndcg float64, complete bool) {
	want := make(map[string]bool, len(gold))
	for _, g := range gold {
		want[g] = true
	}
	seen := map[string]bool{}
	var hits5, hits10 int
	var dcg float64
	i := -1
	for _, name := range ranked {
		if seen[name] {
			continue
		}
		seen[name] = true
		i++
		if i >= 10 {
			break
		}
		if !want[name] {
			continue
		}
		hits10++
		if i < 5 {
			hits5++
		}
		dcg += 1 / math.Log2(float64(i+2))
	}
	var idcg float64
	for i := 0; i < len(gold) && i < 10; i++ {
		idcg += 1 / math.Log2(float64(i+2))
	}
	n := float64(len(gold))
	return float64(hits5) / n, float64(hits10) / n, dcg / idcg, hits10 == len(gold)
}
