package eval

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/toolgate/toolgate/tool"
)

// LoadMetaTool reads MetaTool's ToolE dataset from dir: the tools are the
// 199 names of data/all_clean_data.csv's Tool column, described by
// plugin_des.json or, for the tools MetaTool merged from several plugins,
// big_tool_des.json; each row is a task whose gold is its one tool. It has
// about a hundred queries per tool, the shape usage learning needs.
func LoadMetaTool(dir string) (*Bench, error) {
	desc := map[string]string{}
	for _, f := range []string{"plugin_des.json", "big_tool_des.json"} {
		var m map[string]string
		if err := readJSON(filepath.Join(dir, f), &m); err != nil {
			return nil, err
		}
		for k, v := range m {
			desc[k] = v
		}
	}
	f, err := os.Open(filepath.Join(dir, "all_clean_data.csv"))
	if err != nil {
		return nil, fmt.Errorf("metatool: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReader(f))
	b := &Bench{}
	seen := map[string]bool{}
	for n := 0; ; n++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("metatool: %w", err)
		}
		if n == 0 || len(rec) < 2 {
			continue // the header
		}
		name := strings.TrimSpace(rec[1])
		d, ok := desc[name]
		if !ok {
			continue
		}
		if !seen[name] {
			seen[name] = true
			b.Tools = append(b.Tools, Tool{ID: "metatool::" + name, Server: "metatool", Definition: tool.Definition{Name: name, Description: d}})
		}
		b.Tasks = append(b.Tasks, Task{ID: fmt.Sprint("metatool-", n), Query: rec[0], Gold: []string{name}})
	}
	sort.Slice(b.Tools, func(i, j int) bool { return b.Tools[i].ID < b.Tools[j].ID })
	if len(b.Tools) == 0 || len(b.Tasks) == 0 {
		return nil, fmt.Errorf("metatool in %s: no tools or tasks", dir)
	}
	return b, nil
}

// LoadBFCL reads the named BFCL v4 categories (e.g. "live_multiple") from
// dir: every function offered by any entry is a tool (one per distinct name
// and description, schema as published), the entry's first user message is
// the query and the function names of possible_answer are its gold.
func LoadBFCL(dir string, categories ...string) (*Bench, error) {
	b := &Bench{}
	seen := map[string]bool{}
	for _, c := range categories {
		gold := map[string][]string{}
		err := readLines(filepath.Join(dir, "possible_answer", "BFCL_v4_"+c+".json"), func(line []byte) error {
			var a struct {
				ID          string           `json:"id"`
				GroundTruth []map[string]any `json:"ground_truth"`
			}
			if err := json.Unmarshal(line, &a); err != nil {
				return err
			}
			for _, call := range a.GroundTruth {
				for name := range call {
					gold[a.ID] = append(gold[a.ID], name)
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		err = readLines(filepath.Join(dir, "BFCL_v4_"+c+".json"), func(line []byte) error {
			var e struct {
				ID       string `json:"id"`
				Question [][]struct {
					Role    string `json:"role"`
					Content string `json:"content"`
				} `json:"question"`
				Function []struct {
					Name        string          `json:"name"`
					Description string          `json:"description"`
					Parameters  json.RawMessage `json:"parameters"`
				} `json:"function"`
			}
			if err := json.Unmarshal(line, &e); err != nil {
				return err
			}
			for _, f := range e.Function {
				if key := f.Name + "\x00" + f.Description; !seen[key] {
					seen[key] = true
					b.Tools = append(b.Tools, Tool{ID: "bfcl::" + f.Name, Server: "bfcl", Definition: tool.Definition{Name: f.Name, Description: f.Description, InputSchema: f.Parameters}})
				}
			}
			var query string
			for _, turn := range e.Question {
				for _, m := range turn {
					if m.Role == "user" && query == "" {
						query = m.Content
					}
				}
			}
			g := dedupe(gold[e.ID])
			if query != "" && len(g) > 0 {
				b.Tasks = append(b.Tasks, Task{ID: e.ID, Query: query, Gold: g})
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if len(b.Tools) == 0 || len(b.Tasks) == 0 {
		return nil, fmt.Errorf("bfcl in %s: no tools or tasks", dir)
	}
	return b, nil
}

func dedupe(names []string) []string {
	var out []string
	for _, n := range names {
		if !contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func readLines(path string, fn func([]byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("bfcl: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		if err := fn(sc.Bytes()); err != nil {
			return fmt.Errorf("%s line %d: %w", path, n, err)
		}
	}
	return sc.Err()
}

// Pool joins benchmarks into one: every tool of each (an identical name
// and description once), every task of each.
func Pool(benches ...*Bench) *Bench {
	out := &Bench{}
	seen := map[string]bool{}
	for _, b := range benches {
		for _, t := range b.Tools {
			if key := t.Definition.Name + "\x00" + t.Definition.Description; !seen[key] {
				seen[key] = true
				out.Tools = append(out.Tools, t)
			}
		}
		out.Tasks = append(out.Tasks, b.Tasks...)
	}
	return out
}

// Sample returns n of b's tasks chosen with seed (all of them if n is not
// smaller), over the same tools.
func (b *Bench) Sample(n int, seed uint64) *Bench {
	if n >= len(b.Tasks) {
		return b
	}
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	tasks := make([]Task, len(b.Tasks))
	copy(tasks, b.Tasks)
	r.Shuffle(len(tasks), func(i, j int) { tasks[i], tasks[j] = tasks[j], tasks[i] })
	return &Bench{Tools: b.Tools, Tasks: tasks[:n]}
}

// Split divides b's tasks at random (with seed) into a usage part of
// nUsage tasks and a held-out part of at most nHeld of the rest (all of
// the rest if nHeld ≤ 0), over the same tools: a split by query, so the
// tools of held-out queries were mostly seen in use under other words.
func (b *Bench) Split(nUsage, nHeld int, seed uint64) (usage, held *Bench) {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	tasks := make([]Task, len(b.Tasks))
	copy(tasks, b.Tasks)
	r.Shuffle(len(tasks), func(i, j int) { tasks[i], tasks[j] = tasks[j], tasks[i] })
	nUsage = min(nUsage, len(tasks))
	rest := tasks[nUsage:]
	if nHeld > 0 && nHeld < len(rest) {
		rest = rest[:nHeld]
	}
	return &Bench{Tools: b.Tools, Tasks: tasks[:nUsage]}, &Bench{Tools: b.Tools, Tasks: rest}
}

// UsageRecord is one simulated usage record (the JSON Lines shape of
// toolgate search --usage).
type UsageRecord struct {
	Query     string `json:"query"`
	Tool      string `json:"tool"`
	Principal string `json:"principal"`
}

// Usage turns tasks into usage records spread over principals
// ("user-1"…): each task's query leads to each of its gold tools, and the
// task goes to a principal chosen at random with seed.
func (b *Bench) Usage(principals int, seed uint64) []UsageRecord {
	r := rand.New(rand.NewPCG(seed, seed^0xa11ce))
	var out []UsageRecord
	for _, t := range b.Tasks {
		p := fmt.Sprint("user-", 1+r.IntN(max(principals, 1)))
		for _, g := range t.Gold {
			out = append(out, UsageRecord{Query: t.Query, Tool: g, Principal: p})
		}
	}
	return out
}
