package schema_test

import (
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/schema"
	"github.com/toolgate/toolgate/schema/internal/bfcl"
)

// bfclDir is the BFCL v4 data in the repository's testdata (see its README).
var bfclDir = filepath.Join("..", "testdata", "bfcl-v4")

// TestBFCL normalizes every BFCL v4 function, compiles it for every
// provider and validates the gold calls; -v lists every gold call that
// does not validate, with the reason (go run ./schema/internal/bfclreport
// prints the same).
func TestBFCL(t *testing.T) {
	r, err := bfcl.Run(bfclDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("normalized %d/%d functions; gold calls valid %d/%d; optional omissions valid %d/%d",
		r.Normalized, r.Functions, r.Valid, r.Calls, r.OmitValid, r.Omissions)
	if r.Functions < 6000 || r.Normalized != r.Functions {
		t.Errorf("normalized %d of %d functions", r.Normalized, r.Functions)
	}
	for _, p := range schema.Providers() {
		if r.Compiled[p] != r.Normalized {
			t.Errorf("%s: compiled %d of %d", p, r.Compiled[p], r.Normalized)
		}
	}
	// Every gold call that fails is a fault of the data, classified; the
	// floor keeps a regression in the normalizer from going unnoticed.
	if r.Valid < 2619 {
		t.Errorf("only %d gold calls validate, want at least 2619", r.Valid)
	}
	for _, f := range r.Failures {
		t.Logf("%s %s: %s: %s", f.ID, f.Function, f.Category, f.Reason)
		if f.Category == bfcl.CategorySchema || f.Category == bfcl.CategoryUnknown {
			t.Errorf("%s %s: %s", f.ID, f.Function, f.Reason)
		}
	}
}

// TestBFCLConcrete pins the rule that turns a gold call into arguments.
func TestBFCLConcrete(t *testing.T) {
	args, omit := bfcl.Concrete(map[string]any{
		"a": []any{"", "x"},
		"b": []any{""},
		"c": []any{map[string]any{"min": []any{1.0}, "max": []any{"", 2.0}}},
		"d": []any{[]any{map[string]any{"f": []any{"age"}}}},
		"e": []any{map[string]any{"format": "epoch"}},
		"g": []any{[]any{1.0, 2.0}, []any{2.0, 1.0}},
	})
	want := map[string]any{
		"a": "x",
		"c": map[string]any{"min": 1.0, "max": 2.0},
		"d": []any{map[string]any{"f": "age"}},
		"e": map[string]any{"format": "epoch"},
		"g": []any{1.0, 2.0},
	}
	if len(args) != len(want) || len(omit) != 2 || omit[0] != "a" || omit[1] != "b" {
		t.Fatalf("args %v omit %v", args, omit)
	}
	for k, v := range want {
		if got := args[k]; !equalJSON(got, v) {
			t.Errorf("%s: %v, want %v", k, got, v)
		}
	}
}

func equalJSON(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k := range x {
			if !equalJSON(x[k], y[k]) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return a == b
}
