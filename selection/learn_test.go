package selection

import (
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/toolgate/toolgate/selection/eval"
)

func usageOf(rs []eval.UsageRecord) []Usage {
	out := make([]Usage, len(rs))
	for i, r := range rs {
		out[i] = Usage{Query: r.Query, Tool: r.Tool, Principal: r.Principal}
	}
	return out
}

// TestLearnZeroUsageRanksAsToday: without records (none, or only records
// for tools the catalogue does not have) every LiveMCPBench query ranks
// exactly as Select ranks it, scores included.
func TestLearnZeroUsageRanksAsToday(t *testing.T) {
	b, err := eval.LoadLiveMCPBench(liveMCPBenchDir)
	if err != nil {
		t.Fatal(err)
	}
	defs := b.Definitions()
	x := New(defs, Options{})
	for _, l := range []*Learned{nil, x.Learn(defs, nil, LearnOptions{}), x.Learn(defs, []Usage{{Query: "read a file", Tool: "no_such_tool", Principal: "a"}}, LearnOptions{})} {
		for _, task := range b.Tasks {
			want := x.Select(task.Query, 20)
			if got := x.SelectLearned(task.Query, 20, l); !reflect.DeepEqual(got, want) {
				t.Fatalf("%q: learned %v, want %v", task.Query, got, want)
			}
			for _, e := range x.Explain(task.Query, 20, l) {
				if e.Use != 0 || len(e.Principals) != 0 {
					t.Fatalf("%q: %s explained with use %v from %v", task.Query, e.Name, e.Use, e.Principals)
				}
			}
		}
	}
}

// metaToolSplit is MetaTool split by query: 10,000 usage records from 20
// principals and 2,000 held-out queries.
func metaToolSplit(t *testing.T) (use, held *eval.Bench, records []Usage) {
	t.Helper()
	b, err := eval.LoadMetaTool(filepath.Join("..", "testdata", "metatool"))
	if err != nil {
		t.Fatal(err)
	}
	use, held = b.Split(10000, 2000, 1)
	return use, held, usageOf(use.Usage(20, 7))
}

func score(x *Index, l *Learned, b *eval.Bench) eval.Metrics {
	return b.Score(func(q string) []string { return names(x.SelectLearned(q, 20, l)) })
}

// TestLearnMetaTool: learning from 10,000 records of 20 principals ranks
// 2,000 unseen queries at nDCG@10 ≥ 80, against about 56 without; a
// flood of 2,000 records from one principal pointing other tools' queries
// at one tool costs at most 2 points and puts that tool in the top 3 of
// no held-out query that needs another tool where it was not before.
func TestLearnMetaTool(t *testing.T) {
	use, held, records := metaToolSplit(t)
	defs := held.Definitions()
	x := New(defs, Options{})
	today := score(x, nil, held)
	l := x.Learn(defs, records, LearnOptions{})
	learned := score(x, l, held)
	t.Logf("today %v; learned %v", today, learned)
	if learned.NDCG10 < 80 || learned.NDCG10 < today.NDCG10+20 {
		t.Fatalf("learned nDCG@10 %.1f, today %.1f: want ≥ 80", learned.NDCG10, today.NDCG10)
	}
	if l.Records() != 10000 || l.Principals() != 20 {
		t.Fatalf("learned from %d records of %d principals, want 10000 of 20", l.Records(), l.Principals())
	}

	target := "ProductComparison" // the least used tool
	flood := slices.Clone(records)
	for _, task := range use.Tasks {
		if len(flood) == len(records)+2000 {
			break
		}
		if task.Gold[0] != target {
			flood = append(flood, Usage{Query: task.Query, Tool: target, Principal: "flooder"})
		}
	}
	lf := x.Learn(defs, flood, LearnOptions{})
	flooded := score(x, lf, held)
	if learned.NDCG10-flooded.NDCG10 > 2 {
		t.Fatalf("the flood cost %.1f points of nDCG@10 (%.1f → %.1f), want ≤ 2", learned.NDCG10-flooded.NDCG10, learned.NDCG10, flooded.NDCG10)
	}
	for _, task := range held.Tasks {
		if task.Gold[0] == target {
			continue
		}
		if slices.Contains(names(x.SelectLearned(task.Query, 3, lf)), target) && !slices.Contains(names(x.SelectLearned(task.Query, 3, l)), target) {
			t.Errorf("%q (needs %s): the flood moved %s into the top 3", task.Query, task.Gold[0], target)
		}
	}
}

var learnCatalogue = catalogue

// TestLearnSmall: what a few principals teach, and what does not teach.
func TestLearnSmall(t *testing.T) {
	defs := learnCatalogue
	x := New(defs, Options{})
	query := "what is it like outside in Paris"
	base := names(x.Select(query, 3))
	if slices.Contains(base, "get_weather") {
		t.Fatalf("the test needs a query the text alone misses: %v", base)
	}
	var records []Usage
	for i := range 3 {
		records = append(records, Usage{Query: fmt.Sprintf("what is it like outside in city %d", i), Tool: "get_weather", Principal: fmt.Sprint("p", i)})
	}
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	learnedFirst := func(rs []Usage, o LearnOptions) bool {
		o.Now = now
		l := x.Learn(defs, rs, o)
		ms := x.SelectLearned(query, 3, l)
		return len(ms) > 0 && ms[0].Name == "get_weather"
	}
	if !learnedFirst(records, LearnOptions{}) {
		t.Fatalf("three principals taught get_weather for %q: %v", query, names(x.SelectLearned(query, 3, x.Learn(defs, records, LearnOptions{Now: now}))))
	}
	e := x.Explain(query, 1, x.Learn(defs, records, LearnOptions{Now: now}))
	if e[0].Use <= 0 || !reflect.DeepEqual(e[0].Principals, []string{"p0", "p1", "p2"}) || e[0].Text+e[0].Use != e[0].Score {
		t.Fatalf("explained %+v", e[0])
	}

	// One principal among others teaches nothing alone, however much.
	var alone []Usage
	for i := range 500 {
		alone = append(alone, Usage{Query: fmt.Sprintf("what is it like outside %d", i), Tool: "get_weather", Principal: "p0"})
	}
	alone = append(alone, Usage{Query: "list a folder", Tool: "list_directory", Principal: "p1"})
	if learnedFirst(alone, LearnOptions{}) {
		t.Fatal("one principal's 500 records taught get_weather when another principal exists")
	}

	// A changed or renamed definition loses what its old one learned; the
	// current hash keeps it.
	stale := slices.Clone(records)
	current := slices.Clone(records)
	for i := range stale {
		stale[i].Definition = DefinitionHash(def("get_weather", "Old description.", `{}`))
		current[i].Definition = DefinitionHash(defs[3])
	}
	if learnedFirst(stale, LearnOptions{}) {
		t.Fatal("records of an older definition of get_weather still count")
	}
	if !learnedFirst(current, LearnOptions{}) {
		t.Fatal("records of the current definition do not count")
	}
	renamed := slices.Clone(records)
	for i := range renamed {
		renamed[i].Tool = "weather_now"
	}
	if learnedFirst(renamed, LearnOptions{}) {
		t.Fatal("records of a tool no longer in the catalogue count")
	}

	// Records age: ten half-lives old, they count for nothing.
	old := slices.Clone(records)
	for i := range old {
		old[i].Time = now.Add(-10 * 24 * time.Hour)
	}
	if learnedFirst(old, LearnOptions{HalfLife: 24 * time.Hour}) {
		t.Fatal("records of ten half-lives ago still decide")
	}
	if !learnedFirst(old, LearnOptions{HalfLife: 30 * 24 * time.Hour}) {
		t.Fatal("records of ten days ago with a 30-day half-life do not count")
	}
}
