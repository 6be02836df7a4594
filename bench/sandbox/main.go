// Command sandbox-bench times 100 runs of `true` three ways in one run,
// interleaved so that they share the machine's load: as a plain exec,
// through `bwrap --unshare-all --ro-bind / / true`, and through toolgate's
// native sandbox; then prints p50/p95 and the ratios. Run it with
// bench/sandbox/run.sh.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"time"

	"github.com/toolgate/toolgate/sandbox"
)

func main() {
	if sandbox.Init() {
		return
	}
	n := flag.Int("n", 100, "runs of each")
	cgroups := flag.Bool("cgroups", true, "let the native sandbox make cgroups")
	prestart := flag.Bool("prestart", false, "keep one native helper started ahead (sandbox.Native.Prestart)")
	flag.Parse()
	ws, err := os.MkdirTemp("", "sandbox-bench-")
	if err != nil {
		fatal(err)
	}
	defer os.RemoveAll(ws)
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		fatal(fmt.Errorf("bwrap is not installed (scripts/test-deps.sh installs it): %w", err))
	}
	native := &sandbox.Native{NoCgroup: !*cgroups, Prestart: *prestart}
	defer native.Close()
	runs := map[string]func() error{
		"plain": func() error { return exec.Command("true").Run() },
		"bwrap": func() error { return exec.Command(bwrap, "--unshare-all", "--ro-bind", "/", "/", "true").Run() },
		"native": func() error {
			o, err := native.Run(context.Background(), sandbox.Spec{Argv: []string{"true"}, Root: ws})
			if err == nil && o.ExitCode != 0 {
				err = fmt.Errorf("exit %d: %s", o.ExitCode, o.Stderr)
			}
			return err
		},
	}
	order := []string{"plain", "bwrap", "native"}
	times := map[string][]time.Duration{}
	for _, name := range order { // warm up
		if err := runs[name](); err != nil {
			fatal(fmt.Errorf("%s: %w", name, err))
		}
	}
	for i := 0; i < *n; i++ {
		for _, name := range order {
			start := time.Now()
			if err := runs[name](); err != nil {
				fatal(fmt.Errorf("%s: %w", name, err))
			}
			times[name] = append(times[name], time.Since(start))
		}
	}
	p := func(name string, q float64) time.Duration {
		d := append([]time.Duration(nil), times[name]...)
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[min(len(d)-1, int(q*float64(len(d))))]
	}
	fmt.Printf("%d runs of `true` each, interleaved (cgroups=%v, prestart=%v)\n", *n, *cgroups, *prestart)
	fmt.Printf("%-8s %10s %10s\n", "", "p50", "p95")
	for _, name := range order {
		fmt.Printf("%-8s %10s %10s\n", name, ms(p(name, 0.5)), ms(p(name, 0.95)))
	}
	fmt.Printf("native/bwrap p50 %.2f  p95 %.2f\n", ratio(p("native", 0.5), p("bwrap", 0.5)), ratio(p("native", 0.95), p("bwrap", 0.95)))
	fmt.Printf("native/plain p50 %.2f  p95 %.2f\n", ratio(p("native", 0.5), p("plain", 0.5)), ratio(p("native", 0.95), p("plain", 0.95)))
	goal := p("native", 0.5) <= p("bwrap", 0.5) && p("native", 0.5) <= 25*time.Millisecond && p("native", 0.95) <= 50*time.Millisecond
	fmt.Printf("goal (native p50 <= bwrap p50 and <= 25 ms, p95 <= 50 ms): %v\n", map[bool]string{true: "met", false: "NOT met"}[goal])
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "sandbox-bench:", err)
	os.Exit(1)
}
