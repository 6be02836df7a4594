package eval

import (
	"math"
	"path/filepath"
	"testing"
)

func TestScoreTask(t *testing.T) {
	tests := []struct {
		name          string
		ranked, gold  []string
		r5, r10, ndcg float64
		complete      bool
	}{
		{"perfect", []string{"a", "b"}, []string{"a", "b"}, 1, 1, 1, true},
		{"none", []string{"x", "y"}, []string{"a"}, 0, 0, 0, false},
		{"second", []string{"x", "a"}, []string{"a"}, 1, 1, 1 / math.Log2(3), true},
		// a name repeated (from another server) takes no place of its own
		{"repeats collapse", []string{"x", "x", "x", "x", "x", "y", "a"}, []string{"a"}, 1, 1, 1 / math.Log2(4), true},
		{"sixth", []string{"1", "2", "3", "4", "5", "a", "b"}, []string{"a", "c"}, 0, 0.5, (1 / math.Log2(7)) / (1 + 1/math.Log2(3)), false},
		{"eleventh", []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "a"}, []string{"a"}, 0, 0, 0, false},
	}
	for _, tt := range tests {
		r5, r10, ndcg, complete := scoreTask(tt.ranked, tt.gold)
		if math.Abs(r5-tt.r5) > 1e-9 || math.Abs(r10-tt.r10) > 1e-9 || math.Abs(ndcg-tt.ndcg) > 1e-9 || complete != tt.complete {
			t.Errorf("%s: got %v %v %v %v, want %v %v %v %v", tt.name, r5, r10, ndcg, complete, tt.r5, tt.r10, tt.ndcg, tt.complete)
		}
	}
}

func TestLoadLiveMCPBench(t *testing.T) {
	b, err := LoadLiveMCPBench(filepath.Join("..", "..", "testdata", "livemcpbench"))
	if err != nil {
		t.Fatal(err)
	}
	gold, names := 0, map[string]int{}
	for _, tl := range b.Tools {
		names[tl.Definition.Name]++
	}
	shared := 0
	for _, n := range names {
		if n > 1 {
			shared++
		}
	}
	for _, task := range b.Tasks {
		gold += len(task.Gold)
	}
	// The figures of the data README: 527 tools, 13 names on several
	// servers, 94 tasks keeping gold, 251 of 256 gold lines naming a tool.
	if len(b.Tools) != 527 || shared != 13 || len(b.Tasks) != 94 || gold != 251 {
		t.Errorf("%d tools, %d shared names, %d tasks, %d gold", len(b.Tools), shared, len(b.Tasks), gold)
	}
	if _, err := LoadLiveMCPBench(t.TempDir()); err == nil {
		t.Error("an empty folder loaded")
	}
}
