// Command searchbench runs one search with package search, the way
// bench/search/run.sh compares it with ripgrep: all matches, no limit.
//
//	searchbench [-i] [-print] PATTERN DIR
//
// It builds every matching line (Output content, no limit) and prints their
// number, or with -print the lines as "path:line:text", like rg -n --no-heading.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/toolgate/toolgate/toolsets/fs/internal/search"
)

func main() {
	fold := flag.Bool("i", false, "ignore case")
	print := flag.Bool("print", false, "print the matching lines")
	profile := flag.String("cpuprofile", "", "write a CPU profile of -n runs to this file")
	runs := flag.Int("n", 1, "run the search this many times (for -cpuprofile)")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: searchbench [-i] [-print] PATTERN DIR")
		os.Exit(2)
	}
	root, err := os.OpenRoot(flag.Arg(1))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer root.Close()
	output := search.OutputContent // all matching lines are built, as search_files does
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	var res search.Result
	for range max(*runs, 1) {
		res, err = run(root, flag.Arg(0), *fold, output)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *print {
		w := bufio.NewWriter(os.Stdout)
		for _, m := range res.Matches {
			fmt.Fprintf(w, "%s:%d:%s\n", m.Path, m.Line, m.Text)
		}
		w.Flush()
		return
	}
	fmt.Println(res.TotalMatches)
}

func run(root *os.Root, pattern string, fold bool, output search.Output) (search.Result, error) {
	return search.Run(context.Background(), root, ".", search.Options{
		Pattern:         pattern,
		CaseInsensitive: fold,
		Output:          output,
		MaxLineBytes:    1 << 30,
	})
}
