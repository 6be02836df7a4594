// Command bfclreport measures package schema on the BFCL v4 data: how many
// function declarations normalize and compile for every provider, how many
// gold calls validate against the normalized schemas, and why the others
// do not. Run it from the repository root:
//
//	go run ./schema/internal/bfclreport [DIR]
//
// DIR defaults to testdata/bfcl-v4.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/toolgate/toolgate/schema"
	"github.com/toolgate/toolgate/schema/internal/bfcl"
)

func main() {
	dir := filepath.Join("testdata", "bfcl-v4")
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	r, err := bfcl.Run(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bfclreport:", err)
		os.Exit(2)
	}
	fmt.Printf("functions normalized: %d/%d (names changed for providers: %d)\n", r.Normalized, r.Functions, r.Renamed)
	for _, p := range schema.Providers() {
		fmt.Printf("compiled for %-13s %d/%d\n", string(p)+":", r.Compiled[p], r.Normalized)
	}
	fmt.Printf("gold calls valid: %d/%d\n", r.Valid, r.Calls)
	fmt.Printf("optional omissions valid: %d/%d\n", r.OmitValid, r.Omissions)
	type kv struct {
		k string
		n int
	}
	var changes []kv
	for k, n := range r.Changes {
		changes = append(changes, kv{k, n})
	}
	sort.Slice(changes, func(i, j int) bool {
		return changes[i].n > changes[j].n || changes[i].n == changes[j].n && changes[i].k < changes[j].k
	})
	fmt.Println("normalization changes:")
	for _, c := range changes {
		fmt.Printf("  %5d  %s\n", c.n, c.k)
	}
	byCat := map[string][]bfcl.Failure{}
	var cats []string
	for _, f := range r.Failures {
		if byCat[f.Category] == nil {
			cats = append(cats, f.Category)
		}
		byCat[f.Category] = append(byCat[f.Category], f)
	}
	sort.Strings(cats)
	fmt.Printf("failures: %d\n", len(r.Failures))
	for _, c := range cats {
		fmt.Printf("%s: %d\n", c, len(byCat[c]))
		for _, f := range byCat[c] {
			fmt.Printf("  %s %s: %s\n", f.ID, f.Function, f.Reason)
		}
	}
}
