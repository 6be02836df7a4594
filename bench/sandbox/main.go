//go:build linux

// Command sandbox-bench times `true` in toolgate's sandbox beside
// `bwrap --unshare-all --ro-bind / / true` run as a process, interleaved so
// that every line shares the machine's load. Run it with bench/sandbox/run.sh.
//
// The first part runs in this process: a plain exec, bwrap, the native
// sandbox cold (a helper started for the command) and warm
// (Native.Prestart, with an untimed pause after each warm run as an
// agent's think time).
//
// The second part goes through `toolgate serve` (each program given as an
// argument, with its toolgate-sandbox beside it): a go-sdk client over
// stdio calls execute_command {"argv":["true"]} (a fresh sandbox per
// call), alternating with bwrap. Each round is bwrap, then a call ("after
// bwrap": the bwrap run is the pause since that server's previous call,
// the goal's figure, as the issue asks for alternating runs), then a
// second call at once ("back to back": no pause at all, an agent could not
// call sooner). It prints p50/p95 of each, the ratios to bwrap, and
// whether the goal (the p50 after bwrap <= bwrap's p50) is met; then the
// CPU time per command of each: bwrap's process and its child (rusage),
// and toolgate serve with its sandbox helpers and starter (the /proc stat
// of it and every process below it, children it waited for included): on
// a busy machine, the latency follows it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/benchrun"
	"github.com/toolgate/toolgate/sandbox"
)

func main() {
	if sandbox.Init() {
		return
	}
	n := flag.Int("n", 100, "runs of each")
	cgroups := flag.Bool("cgroups", true, "let the in-process native sandbox make cgroups")
	pause := flag.Duration("pause", 150*time.Millisecond, "untimed pause after each warm run, in which the next helper starts")
	inProcess := flag.Bool("in-process", true, "time the in-process lines (plain, bwrap, native, warm)")
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
	bwrapCmd := func() *exec.Cmd { return exec.Command(bwrap, "--unshare-all", "--ro-bind", "/", "/", "true") }
	if *inProcess {
		inProcessLines(*n, *cgroups, *pause, ws, func() error { return bwrapCmd().Run() })
	}
	if progs := flag.Args(); len(progs) > 0 {
		serveLines(*n, progs, bwrapCmd)
	}
}

// inProcessLines times plain, bwrap, native and warm in this process.
func inProcessLines(n int, cgroups bool, pause time.Duration, ws string, bwrapRun func() error) {
	cold := &sandbox.Native{NoCgroup: !cgroups}
	warm := &sandbox.Native{NoCgroup: !cgroups, Prestart: true}
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
		"bwrap":  bwrapRun,
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
	for range n {
		for _, name := range order {
			start := time.Now()
			if err := runs[name](); err != nil {
				fatal(fmt.Errorf("%s: %w", name, err))
			}
			times[name] = append(times[name], time.Since(start))
			if name == "warm" {
				// An agent thinks between commands: let the next helper
				// start ahead without sharing the CPU with the timed runs.
				time.Sleep(pause)
			}
		}
	}
	fmt.Printf("in this process: %d runs of `true` each, interleaved (cgroups=%v; native = cold, warm = Prestart, %s pause after each)\n", n, cgroups, pause)
	fmt.Printf("%-8s %10s %10s\n", "", "p50", "p95")
	for _, name := range order {
		fmt.Printf("%-8s %10s %10s\n", name, ms(benchrun.Quantile(times[name], 0.5)), ms(benchrun.Quantile(times[name], 0.95)))
	}
	for _, name := range []string{"native", "warm"} {
		fmt.Printf("%s/bwrap p50 %.2f  p95 %.2f\n", name, ratio(times[name], times["bwrap"], 0.5), ratio(times[name], times["bwrap"], 0.95))
		fmt.Printf("%s/plain p50 %.2f  p95 %.2f\n", name, ratio(times[name], times["plain"], 0.5), ratio(times[name], times["plain"], 0.95))
	}
	fmt.Println()
}

// serveLines times execute_command through `toolgate serve`, for each
// program, alternating with bwrap.
func serveLines(n int, progs []string, bwrapCmd func() *exec.Cmd) {
	ctx := context.Background()
	type server struct {
		label string
		cs    *mcp.ClientSession
		pid   int
	}
	var servers []*server
	for i, prog := range progs {
		dir, err := os.MkdirTemp("", "sandbox-bench-serve-")
		if err != nil {
			fatal(err)
		}
		defer os.RemoveAll(dir)
		ws := filepath.Join(dir, "workspace")
		pol := filepath.Join(dir, "toolgate.yaml")
		if err := os.Mkdir(ws, 0o755); err != nil {
			fatal(err)
		}
		// The same command again and again is the benchmark, not a model
		// looping: the loop guard still inspects every call.
		if err := os.WriteFile(pol, []byte("allow: [execute_command]\nlimits:\n  loop:\n    max: 1000000\n"), 0o644); err != nil {
			fatal(err)
		}
		cmd := exec.Command(prog, "serve", "--root", ws, "--policy", pol, "--audit", filepath.Join(dir, "audit.jsonl"))
		cmd.Env = append(os.Environ(), "TOOLGATE_STATE="+filepath.Join(dir, "state"))
		cmd.Stderr = os.Stderr
		client := mcp.NewClient(&mcp.Implementation{Name: "sandbox-bench", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			fatal(fmt.Errorf("%s serve: %w", prog, err))
		}
		defer cs.Close()
		label := ""
		if len(progs) > 1 {
			label = fmt.Sprintf("[%d] ", i+1)
			fmt.Printf("%s= %s\n", label, prog)
		}
		servers = append(servers, &server{label: label, cs: cs, pid: cmd.Process.Pid})
	}
	call := func(s *server) error {
		res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_command", Arguments: map[string]any{"argv": []string{"true"}}})
		if err != nil {
			return err
		}
		out, _ := res.StructuredContent.(map[string]any)
		if res.IsError || out == nil || out["exit_code"] != float64(0) || out["backend"] != "native" {
			return fmt.Errorf("execute_command: %v %v", res.Content, res.StructuredContent)
		}
		return nil
	}
	var bwrapCPU time.Duration
	bwrapCounted := func() error {
		cmd := bwrapCmd()
		err := cmd.Run()
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			bwrapCPU += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
		return err
	}
	times := map[string][]time.Duration{}
	cpu0 := map[*server]time.Duration{}
	timed := func(name string, f func() error, keep bool) {
		start := time.Now()
		if err := f(); err != nil {
			fatal(fmt.Errorf("%s: %w", name, err))
		}
		if keep {
			times[name] = append(times[name], time.Since(start))
		}
	}
	for i := -3; i < n; i++ { // the first rounds warm up and are not counted
		if i == 0 {
			bwrapCPU = 0
			for _, s := range servers {
				cpu0[s] = cpuTime(s.pid)
			}
		}
		for _, s := range servers {
			timed("bwrap", bwrapCounted, i >= 0)
			timed(s.label+"after bwrap", func() error { return call(s) }, i >= 0)
			timed(s.label+"back to back", func() error { return call(s) }, i >= 0)
		}
	}
	fmt.Printf("through toolgate serve: %d rounds of bwrap, execute_command {\"argv\":[\"true\"]} after it, and another at once\n", n)
	fmt.Printf("%-22s %10s %10s %12s %12s\n", "", "p50", "p95", "p50/bwrap", "p95/bwrap")
	fmt.Printf("%-22s %10s %10s\n", "bwrap", ms(benchrun.Quantile(times["bwrap"], 0.5)), ms(benchrun.Quantile(times["bwrap"], 0.95)))
	for _, s := range servers {
		for _, name := range []string{s.label + "after bwrap", s.label + "back to back"} {
			fmt.Printf("%-22s %10s %10s %12.2f %12.2f\n", name, ms(benchrun.Quantile(times[name], 0.5)), ms(benchrun.Quantile(times[name], 0.95)),
				ratio(times[name], times["bwrap"], 0.5), ratio(times[name], times["bwrap"], 0.95))
		}
		verdict := "NOT met"
		if benchrun.Quantile(times[s.label+"after bwrap"], 0.5) <= benchrun.Quantile(times["bwrap"], 0.5) {
			verdict = "met"
		}
		fmt.Printf("%sgoal (p50 of execute_command after bwrap <= bwrap's p50): %s\n", s.label, verdict)
	}
	fmt.Printf("CPU per command: bwrap %s", ms(bwrapCPU/time.Duration(n*len(servers))))
	for _, s := range servers {
		fmt.Printf(", %sserve %s", s.label, ms((cpuTime(s.pid)-cpu0[s])/time.Duration(2*n)))
	}
	fmt.Println(" (serve: the server, its sandbox helpers and starter, 10 ms ticks over all calls)")
	if len(servers) == 2 {
		for _, name := range []string{"after bwrap", "back to back"} {
			fmt.Printf("[2]/[1] %-14s p50 %.2f\n", name, ratio(times["[2] "+name], times["[1] "+name], 0.5))
		}
	}
}

// cpuTime reads the CPU time so far of a process and of every process
// below it ([benchrun.TreeCPU]): the children it waited for count, and
// those still running (toolgate's sandbox starter, helpers started ahead)
// too.
func cpuTime(pid int) time.Duration {
	cpu, found, err := benchrun.TreeCPU(pid)
	if err != nil {
		fatal(err)
	}
	if !found {
		fatal(fmt.Errorf("process %d is gone", pid))
	}
	return cpu
}

func ratio(a, b []time.Duration, q float64) float64 {
	return float64(benchrun.Quantile(a, q)) / float64(benchrun.Quantile(b, q))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "sandbox-bench:", err)
	os.Exit(1)
}
