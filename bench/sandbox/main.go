// Command sandbox-bench times 100 runs of `true` four ways in one run,
// interleaved so that they share the machine's load: as a plain exec,
// through `bwrap --unshare-all --ro-bind / / true`, and through toolgate's
// native sandbox cold (a helper started for the command) and warm
// (Native.Prestart: a helper started ahead once the previous run is over,
// still fresh and used once, with an untimed pause after each warm run as
// an agent's think time); then prints p50/p95 and the ratios. Run it with
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
	pause := flag.Duration("pause", 150*time.Millisecond, "untimed pause after each warm run, in which the next helper starts")
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
	cold := &sandbox.Native{NoCgroup: !*cgroups}
	warm := &sandbox.Native{NoCgroup: !*cgroups, Prestart: true}
	defer warm.Close()
	through := func(n *sandbox.Native) func() error {
		return func() error {
			o, err := n.Run(context.Background(), sandbox.Spec{Argv: []string{"true"}, Root: ws})
			if err == nil && o.ExitCode != 0 {
				err = fmt.Errorf("exit %d: %s", o.ExitCode, o.Stderr)
			}
			return err
		}
	}
	runs := map[string]func() error{
		"plain":  func() error { return exec.Command("true").Run() },
		"bwrap":  func() error { return exec.Command(bwrap, "--unshare-all", "--ro-bind", "/", "/", "true").Run() },
		"native": through(cold),
		"warm":   through(warm),
	}
	order := []string{"plain", "bwrap", "native", "warm"}
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
			if name == "warm" {
				// An agent thinks between commands: let the next helper
				// start ahead without sharing the CPU with the timed runs.
				time.Sleep(*pause)
			}
		}
	}
	p := func(name string, q float64) time.Duration {
		d := append([]time.Duration(nil), times[name]...)
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[min(len(d)-1, int(q*float64(len(d))))]
	}
	fmt.Printf("%d runs of `true` each, interleaved (cgroups=%v; native = cold, warm = Prestart)\n", *n, *cgroups)
	fmt.Printf("%-8s %10s %10s\n", "", "p50", "p95")
	for _, name := range order {
		fmt.Printf("%-8s %10s %10s\n", name, ms(p(name, 0.5)), ms(p(name, 0.95)))
	}
	for _, name := range []string{"native", "warm"} {
		fmt.Printf("%s/bwrap p50 %.2f  p95 %.2f\n", name, ratio(p(name, 0.5), p("bwrap", 0.5)), ratio(p(name, 0.95), p("bwrap", 0.95)))
		fmt.Printf("%s/plain p50 %.2f  p95 %.2f\n", name, ratio(p(name, 0.5), p("plain", 0.5)), ratio(p(name, 0.95), p("plain", 0.95)))
	}
	for _, name := range []string{"native", "warm"} {
		goal := p(name, 0.5) <= p("bwrap", 0.5) && p(name, 0.5) <= 25*time.Millisecond && p(name, 0.95) <= 50*time.Millisecond
		fmt.Printf("goal for %s (p50 <= bwrap p50 and <= 25 ms, p95 <= 50 ms): %v\n", name, map[bool]string{true: "met", false: "NOT met"}[goal])
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "sandbox-bench:", err)
	os.Exit(1)
}
