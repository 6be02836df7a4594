package main

import (
	"fmt"
	"os"

	"github.com/toolgate/toolgate/selection"
	"github.com/toolgate/toolgate/selection/eval"
)

// learnBench prints what learning from use gains on splits by query of
// MetaTool (many queries per tool), a pooled catalogue (LiveMCPBench,
// MetaTool and BFCL) and LiveMCPBench alone, and what one principal's
// flood costs.
func learnBench(root string) {
	mt, err := eval.LoadMetaTool(root + "/metatool")
	must(err)
	lm, err := eval.LoadLiveMCPBench(root + "/livemcpbench")
	must(err)
	bf, err := eval.LoadBFCL(root+"/bfcl-v4", "live_multiple", "live_simple", "multiple", "simple_python", "parallel_multiple")
	must(err)

	fmt.Printf("%-58s %6s %6s %8s\n", "split / method", "R@5", "R@10", "nDCG@10")
	// MetaTool: 10,000 usage records from 20 principals, 2,000 unseen queries.
	use, held := mt.Split(10000, 2000, 1)
	learnRows(fmt.Sprintf("MetaTool (%d tools): 10,000 usage, 2,000 held out", len(mt.Tools)), use, held, true)

	// Pooled: every tool of the three, half of the queries as usage.
	pool := eval.Pool(lm, mt.Sample(2000, 2), bf)
	use, held = pool.Split(len(pool.Tasks)/2, 0, 3)
	learnRows(fmt.Sprintf("pooled (%d tools, %d queries): half usage", len(pool.Tools), len(pool.Tasks)), use, held, false)
	for _, part := range []struct {
		name string
		b    *eval.Bench
	}{{"  of which BFCL", bf}, {"  of which LiveMCPBench", lm}} {
		ids := map[string]bool{}
		for _, t := range part.b.Tasks {
			ids[t.ID] = true
		}
		sub := &eval.Bench{Tools: held.Tools}
		for _, t := range held.Tasks {
			if ids[t.ID] {
				sub.Tasks = append(sub.Tasks, t)
			}
		}
		learnRows(fmt.Sprintf("%s (%d held out)", part.name, len(sub.Tasks)), use, sub, false)
	}
}

// learnRows scores held's queries with plain BM25, today's ranking and the
// learning methods taught by use's queries (20 principals); with flood it
// adds a principal's 2,000 records pointing other tools' queries at one
// tool.
func learnRows(title string, use, held *eval.Bench, flood bool) {
	fmt.Println(title)
	defs := held.Definitions()
	records := toUsage(use.Usage(20, 7))
	plain := selection.New(defs, selection.Options{Plain: true})
	idx := selection.New(defs, selection.Options{})
	row := func(name string, rank func(string) []string) eval.Metrics {
		m := held.Score(rank)
		fmt.Printf("  %-56s %6.1f %6.1f %8.1f\n", name, m.Recall5, m.Recall10, m.NDCG10)
		return m
	}
	names := func(ms []selection.Match) []string {
		out := make([]string, len(ms))
		for i, m := range ms {
			out[i] = m.Name
		}
		return out
	}
	row("plain BM25", func(q string) []string { return names(plain.Select(q, 50)) })
	row("toolgate today (BM25F)", func(q string) []string { return names(idx.Select(q, 50)) })
	for _, c := range []struct {
		name string
		o    selection.LearnOptions
	}{
		{"learned: usage document (default)", selection.LearnOptions{}},
		{"learned: usage document, weight 0.5", selection.LearnOptions{Weight: 0.5}},
		{"learned: usage document, weight 2", selection.LearnOptions{Weight: 2}},
		{"learned: term-tool association", selection.LearnOptions{Method: selection.LearnAssociation}},
		{"learned: term-tool association, weight 4", selection.LearnOptions{Method: selection.LearnAssociation, Weight: 4}},
	} {
		l := idx.Learn(defs, records, c.o)
		row(fmt.Sprintf("%s (%d records)", c.name, l.Records()), func(q string) []string { return names(idx.SelectLearned(q, 50, l)) })
	}
	if !flood {
		return
	}
	// A flood: one principal's 2,000 records point other tools' queries
	// (of the usage split) at one tool, the least used one.
	count := map[string]int{}
	for _, r := range records {
		count[r.Tool]++
	}
	target := ""
	for _, d := range defs {
		if target == "" || count[d.Name] < count[target] {
			target = d.Name
		}
	}
	var flooded []selection.Usage
	for _, t := range use.Tasks {
		if len(flooded) == 2000 {
			break
		}
		if t.Gold[0] != target {
			flooded = append(flooded, selection.Usage{Query: t.Query, Tool: target, Principal: "flooder"})
		}
	}
	base := idx.Learn(defs, records, selection.LearnOptions{})
	l := idx.Learn(defs, append(append([]selection.Usage{}, records...), flooded...), selection.LearnOptions{})
	row(fmt.Sprintf("learned + flood of 2,000 records at %s", target), func(q string) []string { return names(idx.SelectLearned(q, 50, l)) })
	top3 := func(l *selection.Learned) (n, of int) {
		for _, t := range held.Tasks {
			if t.Gold[0] == target {
				continue
			}
			of++
			for _, m := range idx.SelectLearned(t.Query, 3, l) {
				if m.Name == target {
					n++
					break
				}
			}
		}
		return n, of
	}
	n0, of := top3(base)
	n1, _ := top3(l)
	fmt.Printf("  %s in the top 3 of held-out queries that need another tool: %d of %d before the flood, %d after\n", target, n0, of, n1)
}

func toUsage(rs []eval.UsageRecord) []selection.Usage {
	out := make([]selection.Usage, len(rs))
	for i, r := range rs {
		out[i] = selection.Usage{Query: r.Query, Tool: r.Tool, Principal: r.Principal}
	}
	return out
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
