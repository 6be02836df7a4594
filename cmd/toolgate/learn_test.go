package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/selection/eval"
)

// writeBench writes a benchmark's tools as a tools file and some of its
// tasks as a queries file in dir, and returns the gold of each query id.
func writeBench(t *testing.T, dir string, b *eval.Bench) map[string][]string {
	t.Helper()
	var tools []map[string]any
	for _, tl := range b.Tools {
		tools = append(tools, map[string]any{"name": tl.Definition.Name, "description": tl.Definition.Description, "inputSchema": tl.Definition.InputSchema})
	}
	data, _ := json.Marshal(tools)
	if err := os.WriteFile(filepath.Join(dir, "tools.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	var q strings.Builder
	gold := map[string][]string{}
	for i, task := range b.Tasks {
		id := fmt.Sprint("q", i)
		line, _ := json.Marshal(map[string]string{"id": id, "query": task.Query})
		q.Write(append(line, '\n'))
		gold[id] = task.Gold
	}
	if err := os.WriteFile(filepath.Join(dir, "q.jsonl"), []byte(q.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return gold
}

func writeUsage(t *testing.T, path string, rs []eval.UsageRecord) {
	t.Helper()
	var b strings.Builder
	for _, r := range rs {
		line, _ := json.Marshal(r)
		b.Write(append(line, '\n'))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// firstHits counts the batch output lines whose first tool is a gold one.
func firstHits(t *testing.T, out string, gold map[string][]string) int {
	t.Helper()
	n := 0
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var line struct {
			ID    string   `json:"id"`
			Tools []string `json:"tools"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("%v: %s", err, sc.Text())
		}
		if len(line.Tools) > 0 && strings.Contains(strings.Join(gold[line.ID], "\n")+"\n", line.Tools[0]+"\n") {
			n++
		}
	}
	return n
}

// TestSearchUsageOffline: toolgate search --usage on LiveMCPBench with no
// records that count prints byte for byte what it prints without --usage;
// on MetaTool, 4,000 usage records of 20 principals put the right tool
// first for far more of 500 unseen queries, and --explain says how much
// came from use and from how many principals.
func TestSearchUsageOffline(t *testing.T) {
	lm, err := eval.LoadLiveMCPBench(filepath.Join("..", "..", "testdata", "livemcpbench"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeBench(t, dir, lm)
	writeUsage(t, filepath.Join(dir, "none.jsonl"), []eval.UsageRecord{{Query: "read a file", Tool: "no_such_tool", Principal: "a"}})
	os.WriteFile(filepath.Join(dir, "empty.jsonl"), nil, 0o644)
	plain := toolgate(t, dir, "", "search", "--tools", "tools.json", "--queries", "q.jsonl", "-k", "10")
	for _, u := range []string{"none.jsonl", "empty.jsonl"} {
		r := toolgate(t, dir, "", "search", "--tools", "tools.json", "--queries", "q.jsonl", "-k", "10", "--usage", u)
		if plain.code != 0 || r.code != 0 || r.stdout != plain.stdout || strings.Count(r.stdout, "\n") != len(lm.Tasks) {
			t.Fatalf("--usage %s: exit %d/%d, output differs from no usage: %v\n%s", u, plain.code, r.code, r.stdout != plain.stdout, r.stderr)
		}
	}

	mt, err := eval.LoadMetaTool(filepath.Join("..", "..", "testdata", "metatool"))
	if err != nil {
		t.Fatal(err)
	}
	use, held := mt.Split(4000, 500, 11)
	dir = t.TempDir()
	gold := writeBench(t, dir, held)
	writeUsage(t, filepath.Join(dir, "usage.jsonl"), use.Usage(20, 5))
	before := toolgate(t, dir, "", "search", "--tools", "tools.json", "--queries", "q.jsonl", "-k", "10")
	after := toolgate(t, dir, "", "search", "--tools", "tools.json", "--queries", "q.jsonl", "-k", "10", "--usage", "usage.jsonl")
	if before.code != 0 || after.code != 0 {
		t.Fatalf("exit %d/%d: %s%s", before.code, after.code, before.stderr, after.stderr)
	}
	h0, h1 := firstHits(t, before.stdout, gold), firstHits(t, after.stdout, gold)
	t.Logf("right tool first: %d of 500 without usage, %d with", h0, h1)
	if h1 < h0+100 {
		t.Fatalf("right tool first: %d of 500 without usage, %d with: want at least 100 more", h0, h1)
	}

	r := toolgate(t, dir, "", "search", "convert 100 dollars to euros", "--tools", "tools.json", "--usage", "usage.jsonl", "--explain", "--json", "-k", "3")
	var out struct {
		Tools   []string `json:"tools"`
		Explain []struct {
			Name             string
			Score, Text, Use float64
			Principals       int
		} `json:"explain"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 0 || len(out.Explain) != 3 {
		t.Fatalf("--explain: exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if e := out.Explain[0]; e.Use <= 0 || e.Principals < 2 || e.Principals > 20 || e.Text+e.Use-e.Score > 1e-9 || e.Score-e.Text-e.Use > 1e-9 {
		t.Errorf("--explain: %+v", out.Explain)
	}
	r = toolgate(t, dir, "", "search", "convert 100 dollars to euros", "--tools", "tools.json", "--usage", "usage.jsonl", "--explain", "-k", "3")
	if r.code != 0 || !strings.Contains(r.stdout, "USE") || !strings.Contains(r.stdout, "PRINCIPALS") {
		t.Errorf("--explain table: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	os.WriteFile(filepath.Join(dir, "bad.jsonl"), []byte("{\"query\":\"x\"}\n"), 0o644)
	if r = toolgate(t, dir, "", "search", "x", "--tools", "tools.json", "--usage", "bad.jsonl"); r.code != 2 || !strings.Contains(r.stderr, "line 1") {
		t.Errorf("a record without a tool: exit %d %s", r.code, r.stderr)
	}
}
