// Command remote measures what a remote sandbox adds to a call: the same
// `serve --http --stateless` replica, governed as in production (the
// default policy, its own audit log), once with sandbox.backend local over
// a folder and once with sandbox.backend runner over a `toolgate runner`
// on loopback; one call at a time, in alternating rounds, the median of
// the rounds' p50. Calls: read_file of a small file, and execute_command
// `true`. The loop guard allows identical calls without bound (the
// benchmark repeats one call on purpose; the guard still runs). Run it
// through bench/remote/run.sh.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/benchrun"
)

var (
	toolgate = flag.String("toolgate", "toolgate", "the toolgate binary")
	seqN     = flag.Int("seq", 300, "calls per round")
	rounds   = flag.Int("rounds", 4, "rounds of each (alternating)")
	only     = flag.String("only", "", "measure this call alone (read_file or execute_command)")
)

const secret = "bench-remote-runner-secret-0123456789"

func main() {
	flag.Parse()
	work, err := os.MkdirTemp("", "toolgate-remote-")
	check(err)
	defer os.RemoveAll(work)
	root := filepath.Join(work, "root")
	check(os.MkdirAll(root, 0o755))
	small := ""
	for i := range 20 {
		small += fmt.Sprintf("line %d of a small file read by the remote sandbox benchmark\n", i+1)
	}
	check(os.WriteFile(filepath.Join(root, "small.txt"), []byte(small), 0o644))
	check(os.Setenv("BENCH_RUNNER_SECRET", secret))

	var procs []*exec.Cmd
	defer func() {
		for _, p := range procs {
			p.Process.Signal(os.Interrupt)
			p.Wait()
		}
	}()
	pids := map[string]int{}
	start := func(re *regexp.Regexp, args ...string) string {
		cmd := exec.Command(*toolgate, args...)
		u, err := benchrun.Announced(cmd, re, cmd.Args[1])
		check(err)
		procs = append(procs, cmd)
		pids[u] = cmd.Process.Pid
		return u
	}
	runner := start(runnerRE, "runner", "--listen", "127.0.0.1:0", "--dir", filepath.Join(work, "sandboxes"), "--token-env", "BENCH_RUNNER_SECRET")
	base := "allow: [execute_command]\nlimits:\n  loop:\n    max: 100000000\n"
	local := writePolicy(work, "local.yaml", base)
	remote := writePolicy(work, "remote.yaml", base+"sandbox:\n  backend: runner\n  runner:\n    url: "+runner+"\n    secret_env: BENCH_RUNNER_SECRET\n")
	serve := func(name string, args ...string) string {
		return start(serveRE, append([]string{"serve", "--audit", filepath.Join(work, "audit-"+name+".jsonl"), "--http", "127.0.0.1:0", "--stateless"}, args...)...)
	}
	uLocal, uRemote := serve("local", "--root", root, "--policy", local), serve("remote", "--policy", remote)
	cLocal, cRemote := connect(uLocal), connect(uRemote)
	// CPU of the processes that serve a call of each backend: the local
	// replica; the remote replica and the runner (its commands included).
	cpuOf := func(urls ...string) time.Duration {
		var sum time.Duration
		for _, u := range urls {
			c, _, err := benchrun.TreeCPU(pids[u])
			check(err)
			sum += c
		}
		return sum
	}
	// The remote sandbox gets the same file, through the gateway.
	mustCall(cRemote, "write_file", map[string]any{"path": "small.txt", "content": small})

	fmt.Printf("toolgate serve --http --stateless, one call at a time, %d rounds of %d calls, median of the rounds' p50, %d cores\n", *rounds, *seqN, runtime.NumCPU())
	fmt.Println("(wall time on a shared, loaded machine: noisy; compare the ratios of one run, not figures across runs)")
	for _, c := range []struct {
		name string
		args map[string]any
		goal float64
	}{
		{"read_file", map[string]any{"path": "small.txt"}, 1.5},
		{"execute_command", map[string]any{"command": "true"}, 1.3},
	} {
		if *only != "" && *only != c.name {
			continue
		}
		var pl, pr []time.Duration
		var cl, cr, cn time.Duration
		var sl, sr, sn int64
		for range 20 {
			mustCall(cLocal, c.name, c.args)
			mustCall(cRemote, c.name, c.args)
		}
		for range *rounds {
			c0, s0 := cpuOf(uLocal), switches(pids[uLocal])
			pl = append(pl, benchrun.Percentile(sequential(cLocal, c.name, c.args), 50))
			sl += switches(pids[uLocal]) - s0
			c1, n1 := cpuOf(uRemote, runner), cpuOf(runner)
			s1, m1 := switches(pids[uRemote]), switches(pids[runner])
			cl += cpuOf(uLocal) - c0
			pr = append(pr, benchrun.Percentile(sequential(cRemote, c.name, c.args), 50))
			cr += cpuOf(uRemote, runner) - c1
			cn += cpuOf(runner) - n1
			sr += switches(pids[uRemote]) - s1
			sn += switches(pids[runner]) - m1
		}
		ml, mr := benchrun.Percentile(pl, 50), benchrun.Percentile(pr, 50)
		ratio := mr.Seconds() / ml.Seconds()
		n := time.Duration(*rounds * *seqN)
		fmt.Printf("\n%s\n  backend local    p50 %s  CPU/call %s\n  backend runner   p50 %s  CPU/call %s (replica %s + runner %s)\n  ratio            %.2fx (goal ≤ %.1fx): %s; CPU %.2fx\n",
			c.name, ms(ml), us(cl/n), ms(mr), us(cr/n), us((cr-cn)/n), us(cn/n), ratio, c.goal, verdict(ratio <= c.goal), cr.Seconds()/cl.Seconds())
		if sl > 0 {
			per := func(s int64) float64 { return float64(s) / float64(n) }
			fmt.Printf("  switches/call    local %.1f; runner backend: replica %.1f + runner %.1f\n", per(sl), per(sr), per(sn))
		}
	}
}

// switches is how many times the threads of process pid gave up or were
// taken off a CPU so far (voluntary and involuntary context switches, of
// its threads alive now); 0 where /proc does not say.
func switches(pid int) int64 {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	var sum int64
	for _, t := range tasks {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, t.Name()))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(data), "\n") {
			if _, v, ok := strings.Cut(l, "ctxt_switches:"); ok { // voluntary_ and nonvoluntary_
				n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				sum += n
			}
		}
	}
	return sum
}

func sequential(cs *mcp.ClientSession, name string, args map[string]any) []time.Duration {
	lat := make([]time.Duration, *seqN)
	for i := range lat {
		t0 := time.Now()
		mustCall(cs, name, args)
		lat[i] = time.Since(t0)
	}
	return lat
}

func mustCall(cs *mcp.ClientSession, name string, args map[string]any) {
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args, Meta: mcp.Meta{"toolgate/conversation": "bench"}})
	check(err)
	if res.IsError {
		check(fmt.Errorf("%s returned an error: %v", name, res.Content))
	}
}

func connect(endpoint string) *mcp.ClientSession {
	c := mcp.NewClient(&mcp.Implementation{Name: "remote-bench", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1}, nil)
	check(err)
	return cs
}

var (
	serveRE  = regexp.MustCompile(`serving MCP at (http://\S+/mcp)`)
	runnerRE = regexp.MustCompile(`runner serving MCP at (http://\S+)/sandboxes/`)
)

func writePolicy(work, name, src string) string {
	p := filepath.Join(work, name)
	check(os.WriteFile(p, []byte(src), 0o644))
	return p
}

func us(d time.Duration) string { return fmt.Sprintf("%.0fµs", d.Seconds()*1e6) }

func ms(d time.Duration) string { return fmt.Sprintf("%.3fms", d.Seconds()*1000) }

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "remote:", err)
		os.Exit(1)
	}
}
