//go:build unix

// Command startup-bench times whole toolgate processes, one call each, for
// one or more builds of toolgate given as arguments, interleaved so that
// they share the machine's load, beside bubblewrap running `true` and a Go
// hello-world program (-hello), the peer of goal 5 of issue 19: an audited
// `toolgate call read_file` within 2x its time. Beside the wall time it
// prints each process's own CPU time (user + system, from its rusage: what
// a loaded machine inflates least) and its page faults. Run it with
// bench/startup/run.sh, which builds the programs.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/toolgate/toolgate/internal/benchrun"
)

// A step is one process to time; {n} in an argument is the run's number,
// so that no two calls are identical (the loop guard would stop the sixth).
type step struct {
	name string
	args []string
}

var steps = []step{
	{"version", []string{"version"}},
	{"read_file, no audit", []string{"call", "read_file", `{"path":"small.txt","limit":{n}}`, "--audit", "off"}},
	{"read_file", []string{"call", "read_file", `{"path":"small.txt","limit":{n}}`}},
	{"execute_command", []string{"call", "execute_command", `{"command":"true {n}"}`, "--yes"}},
}

func main() {
	n := flag.Int("n", 50, "runs of each")
	hello := flag.String("hello", "", "a Go hello-world program, built with the same go command and flags")
	flag.Parse()
	progs := flag.Args()
	if len(progs) == 0 || *hello == "" {
		fatal(fmt.Errorf("usage: startup-bench [-n RUNS] -hello HELLO TOOLGATE..."))
	}
	tmp, err := os.MkdirTemp("", "startup-bench-")
	if err != nil {
		fatal(err)
	}
	defer os.RemoveAll(tmp)
	ws := filepath.Join(tmp, "workspace")
	if err := os.Mkdir(ws, 0o755); err != nil {
		fatal(err)
	}
	var small strings.Builder
	for i := range 200 {
		fmt.Fprintf(&small, "line %d of a small file\n", i)
	}
	if err := os.WriteFile(filepath.Join(ws, "small.txt"), []byte(small.String()), 0o644); err != nil {
		fatal(err)
	}
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		fatal(err)
	}
	type timed struct {
		label string
		argv  func(i int) []string
	}
	var all []timed
	all = append(all, timed{"bwrap true", func(int) []string { return []string{bwrap, "--unshare-all", "--ro-bind", "/", "/", "true"} }})
	all = append(all, timed{"hello world", func(int) []string { return []string{*hello} }})
	for pi, prog := range progs {
		for _, s := range steps {
			all = append(all, timed{label(progs, pi) + s.name, func(i int) []string {
				argv := []string{prog}
				for _, a := range s.args {
					argv = append(argv, strings.ReplaceAll(a, "{n}", strconv.Itoa(i)))
				}
				return argv
			}})
		}
	}
	// Per label: wall times, CPU times (user + system of the process) and
	// page faults.
	times, cpu, faults := map[string][]time.Duration{}, map[string][]time.Duration{}, map[string][]int64{}
	for i := -1; i < *n; i++ { // run -1 warms the page cache and is not counted
		for k, t := range all {
			argv := t.argv(i + 2)
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Dir = ws
			state := filepath.Join(tmp, "state-"+strconv.Itoa(k)) // each its own audit log
			cmd.Env = append(os.Environ(), "TOOLGATE_STATE="+state, "TOOLGATE_AUDIT="+filepath.Join(state, "audit.jsonl"))
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			start := time.Now()
			err := cmd.Run()
			d := time.Since(start)
			if err != nil {
				fatal(fmt.Errorf("%s: %v\n%s", strings.Join(argv, " "), err, out.String()))
			}
			if i >= 0 {
				ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
				times[t.label] = append(times[t.label], d)
				cpu[t.label] = append(cpu[t.label], time.Duration(syscall.TimevalToNsec(ru.Utime)+syscall.TimevalToNsec(ru.Stime)))
				faults[t.label] = append(faults[t.label], ru.Minflt+ru.Majflt)
			}
		}
	}
	fmt.Printf("%d runs of each, interleaved; a process each (ms; faults: page faults)\n", *n)
	fmt.Printf("%-34s %8s %8s %10s %8s %8s\n", "", "p50", "p95", "p50 step", "CPU p50", "faults")
	p50 := func(l string) time.Duration { return benchrun.Quantile(times[l], 0.5) }
	cpu50 := func(l string) time.Duration { return benchrun.Quantile(cpu[l], 0.5) }
	row := func(l, step string) {
		fmt.Printf("%-34s %8s %8s %10s %8s %8d\n", l, ms(p50(l)), ms(benchrun.Quantile(times[l], 0.95)), step, ms(cpu50(l)), benchrun.Quantile(faults[l], 0.5))
	}
	for _, peer := range []string{"bwrap true", "hello world"} {
		row(peer, "")
	}
	ratio := func(a, b time.Duration) float64 { return float64(a) / float64(b) }
	for pi, prog := range progs {
		prev := time.Duration(0)
		for _, s := range steps {
			l := label(progs, pi) + s.name
			row(l, "+"+ms(p50(l)-prev))
			prev = p50(l)
		}
		fmt.Printf("%-34s %8s %8s\n", "ratios", "wall", "CPU")
		for _, r := range [][2]string{{"execute_command", "bwrap true"}, {"version", "hello world"}} {
			a, b := label(progs, pi)+r[0], r[1]
			fmt.Printf("%-34s %8.2f %8.2f\n", a+" / "+strings.Fields(b)[0], ratio(p50(a), p50(b)), ratio(cpu50(a), cpu50(b)))
		}
		l := label(progs, pi) + "read_file"
		r := ratio(p50(l), p50("hello world"))
		fmt.Printf("%-34s %8.2f %8.2f  goal ≤ 2 (wall): %s\n", l+" / hello world", r, ratio(cpu50(l), cpu50("hello world")), map[bool]string{true: "met", false: "NOT met"}[r <= 2])
		fmt.Printf("%-34s %8s\n", label(progs, pi)+"package init (inittrace)", initTime(prog))
	}
	if len(progs) == 2 {
		fmt.Printf("%-34s %8s %8s\n", "after/before", "wall", "CPU")
		for _, s := range steps {
			a, b := label(progs, 1)+s.name, label(progs, 0)+s.name
			fmt.Printf("after/before %-21s %8.2f %8.2f\n", s.name, ratio(p50(a), p50(b)), ratio(cpu50(a), cpu50(b)))
		}
	}
}

// label names the build in the output when there are several.
func label(progs []string, i int) string {
	if len(progs) == 1 {
		return ""
	}
	return []string{"before: ", "after: "}[min(i, 1)]
}

// initTime sums GODEBUG=inittrace=1's clock times of `prog version` (the
// median of 11 runs) and names the three slowest packages of the last.
func initTime(prog string) string {
	var sums []float64
	var top string
	for range 11 {
		cmd := exec.Command(prog, "version")
		cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Run(); err != nil {
			return err.Error()
		}
		type pkg struct {
			name string
			ms   float64
		}
		var pkgs []pkg
		sum := 0.0
		for _, line := range strings.Split(errb.String(), "\n") {
			f := strings.Fields(line) // init PKG @T ms, CLOCK ms clock, …
			if len(f) < 6 || f[0] != "init" {
				continue
			}
			v, err := strconv.ParseFloat(f[4], 64)
			if err != nil {
				continue
			}
			sum += v
			pkgs = append(pkgs, pkg{f[1], v})
		}
		sums = append(sums, sum)
		sort.Slice(pkgs, func(i, j int) bool { return pkgs[i].ms > pkgs[j].ms })
		var b strings.Builder
		for _, p := range pkgs[:min(3, len(pkgs))] {
			fmt.Fprintf(&b, "%s %.2f, ", p.name, p.ms)
		}
		top = strings.TrimSuffix(b.String(), ", ")
	}
	sort.Float64s(sums)
	return fmt.Sprintf("%.2fms (slowest: %s)", sums[len(sums)/2], top)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d.Microseconds())/1000) }

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "startup-bench:", err)
	os.Exit(1)
}
