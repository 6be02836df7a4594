// Command mcp compares `toolgate serve` with the reference filesystem
// server (@modelcontextprotocol/server-filesystem) over stdio: the same
// folder, the same reads of one small file, from one go-sdk client, first
// one call at a time and then with several in flight, in rounds that
// alternate the servers (the figures are each server's medians, so that a
// change in the machine's load weighs on both alike). It prints calls/s,
// p50/p99 latency, the server's peak RSS (VmHWM), the CPU time per call of the
// server and of this client (the client's is a floor under the latency of
// every server), the time to the
// initialize answer, the ratios, and whether issue 19's goals are met
// (server CPU per call and peak RSS each at most 1/3 of the reference's).
//
// With -http it does the same over streamable HTTP: `toolgate serve --http`
// on a loopback port, and, as a peer rather than a reference (server-
// filesystem has no HTTP transport), @modelcontextprotocol/server-everything
// over streamable HTTP answering its echo tool. Run it through
// bench/mcp/run.sh.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/benchrun"
)

type server struct {
	name string
	cmd  func() *exec.Cmd
	url  string // streamable HTTP endpoint the command serves; "": stdio
	tool string
	args map[string]any
}

type figures struct {
	init           time.Duration // from start to the initialize answer
	seqRate        float64
	seqP50, seqP99 time.Duration
	parRate        float64
	parP50, parP99 time.Duration
	peakKB         int
	cpuPerCall     time.Duration // the server's CPU time (user + system) per call, both phases
	seqCPU, parCPU time.Duration // the same, of each phase alone
	clientPerCall  time.Duration // this client's, the same for every server: a floor under its latency
}

func main() {
	toolgate := flag.String("toolgate", "", "toolgate binary")
	node := flag.String("node", "node", "node binary (>= 22)")
	fsServer := flag.String("fs", "", "dist/index.js of @modelcontextprotocol/server-filesystem")
	everything := flag.String("everything", "", "with -http: dist/index.js of @modelcontextprotocol/server-everything, the HTTP peer")
	overHTTP := flag.Bool("http", false, "streamable HTTP on loopback instead of stdio")
	dir := flag.String("dir", "", "folder both servers work in")
	file := flag.String("file", "small.txt", "file read, relative to -dir")
	n := flag.Int("n", 2000, "reads per phase")
	conc := flag.Int("c", 8, "calls in flight in the parallel phase")
	audit := flag.String("audit", "", "toolgate's audit log (default: a file in a temporary folder)")
	pol := flag.String("policy", "", "toolgate's policy file (default: the default policy)")
	rounds := flag.Int("rounds", 3, "rounds of both phases per server, alternating the servers; the figures are the medians")
	only := flag.Bool("only", false, "run toolgate alone (no peer, no ratios): a steady load to profile it under")
	flag.Parse()
	if *toolgate == "" || *dir == "" || (!*overHTTP && !*only && *fsServer == "") {
		fmt.Fprintln(os.Stderr, "usage: mcp -toolgate BIN -dir DIR (-node NODE -fs SERVER_JS | -http [-node NODE -everything SERVER_JS] | -only) [-n 2000] [-c 8]")
		os.Exit(2)
	}
	abs, err := filepath.Abs(filepath.Join(*dir, *file))
	check(err)
	if *audit == "" {
		tmp, err := os.MkdirTemp("", "mcpbench-")
		check(err)
		defer os.RemoveAll(tmp)
		*audit = filepath.Join(tmp, "audit.jsonl")
	}
	tg := server{name: "toolgate serve", tool: "read_file", args: map[string]any{"path": *file}}
	tgArgs := []string{"serve", "--root", *dir, "--audit", *audit}
	if *pol != "" {
		tgArgs = append(tgArgs, "--policy", *pol)
	}
	if !*overHTTP {
		tg.cmd = func() *exec.Cmd { return exec.Command(*toolgate, tgArgs...) }
		if *only {
			fmt.Printf("%d reads of %s, sequential then %d in flight, %d rounds, one go-sdk client over stdio, toolgate alone\n\n", *n, *file, *conc, *rounds)
			run([]server{tg}, *n, *conc, *rounds)
			return
		}
		ref := server{name: "server-filesystem", tool: "read_text_file", args: map[string]any{"path": abs},
			cmd: func() *exec.Cmd { return exec.Command(*node, *fsServer, *dir) }}
		fmt.Printf("%d reads of %s, sequential then %d in flight, %d rounds, one go-sdk client over stdio\n\n", *n, *file, *conc, *rounds)
		res := run([]server{tg, ref}, *n, *conc, *rounds)
		t, r := res[0], res[1]
		fmt.Printf("\ntoolgate / reference: throughput %.1fx sequential, %.1fx parallel; peak RSS %.2fx (%.1f MB vs %.1f MB); init %.2fx; server CPU per call %.2fx\n",
			t.seqRate/r.seqRate, t.parRate/r.parRate, float64(t.peakKB)/float64(r.peakKB),
			float64(t.peakKB)/1024, float64(r.peakKB)/1024, t.init.Seconds()/r.init.Seconds(), t.cpuPerCall.Seconds()/r.cpuPerCall.Seconds())
		cpu, rss := t.cpuPerCall.Seconds()/r.cpuPerCall.Seconds(), float64(t.peakKB)/float64(r.peakKB)
		fmt.Printf("goal (issue 19): server CPU per call <= 1/3 of the reference's: %.2fx, %s; peak RSS <= 1/3: %.2fx, %s\n",
			cpu, verdict(cpu <= 1.0/3), rss, verdict(rss <= 1.0/3))
		return
	}
	tgURL := "http://" + freeAddr() + "/mcp"
	tg.url = tgURL
	tg.cmd = func() *exec.Cmd {
		return exec.Command(*toolgate, append(tgArgs, "--http", strings.TrimSuffix(strings.TrimPrefix(tgURL, "http://"), "/mcp"))...)
	}
	servers := []server{tg}
	if *everything != "" && !*only {
		addr := freeAddr()
		_, port, _ := net.SplitHostPort(addr)
		servers = append(servers, server{name: "server-everything", url: "http://" + addr + "/mcp", tool: "echo",
			args: map[string]any{"message": "a short message echoed by the MCP benchmark"},
			cmd: func() *exec.Cmd {
				c := exec.Command(*node, *everything, "streamableHttp")
				c.Env = append(os.Environ(), "PORT="+port)
				return c
			}})
	}
	fmt.Printf("%d calls, sequential then %d in flight, %d rounds, one go-sdk client over streamable HTTP on loopback\n", *n, *conc, *rounds)
	fmt.Printf("(toolgate: governed read_file of %s; server-everything, a peer and not a reference: its echo tool)\n\n", *file)
	res := run(servers, *n, *conc, *rounds)
	if len(res) == 2 {
		t, r := res[0], res[1]
		fmt.Printf("\ntoolgate / server-everything (different tools): server CPU per call %.2fx; peak RSS %.2fx; throughput %.1fx sequential, %.1fx parallel\n",
			t.cpuPerCall.Seconds()/r.cpuPerCall.Seconds(), float64(t.peakKB)/float64(r.peakKB), t.seqRate/r.seqRate, t.parRate/r.parRate)
	}
}

// run starts every server, then measures them in rounds, alternating their
// order (first to last, then last to first) so that a change in the load of
// the machine weighs on all alike. It prints each server's median figures
// and its CPU per call in every round, and returns the medians.
func run(servers []server, n, conc, rounds int) []figures {
	rs := make([]*running, len(servers))
	for i, s := range servers {
		rs[i] = start(s)
		defer rs[i].close()
	}
	per := make([][]figures, len(rs))
	peak := make([]int, len(rs)) // after the first round: the loop the goal names
	for k := range rounds {
		for j := range rs {
			i := j
			if k%2 == 1 {
				i = len(rs) - 1 - j
			}
			per[i] = append(per[i], rs[i].round(n, conc))
			if k == 0 {
				peak[i] = vmHWM(rs[i].cmd.Process.Pid)
			}
		}
	}
	fmt.Printf("%-18s %10s %10s %9s %9s %10s %9s %9s %10s %9s %13s %11s\n", "server", "init", "seq c/s", "seq p50", "seq p99", "par c/s", "par p50", "par p99", "peak RSS", "CPU/call", "seq/par CPU", "client CPU")
	res := make([]figures, len(rs))
	for i, r := range rs {
		f := medians(per[i])
		f.init, f.peakKB = r.init, peak[i]
		res[i] = f
		fmt.Printf("%-18s %10s %10.0f %9s %9s %10.0f %9s %9s %8.1fMB %7.0fµs %6.0f/%4.0fµs %9.0fµs\n", r.name, ms(f.init), f.seqRate, ms(f.seqP50), ms(f.seqP99),
			f.parRate, ms(f.parP50), ms(f.parP99), float64(f.peakKB)/1024, float64(f.cpuPerCall.Microseconds()),
			float64(f.seqCPU.Microseconds()), float64(f.parCPU.Microseconds()), float64(f.clientPerCall.Microseconds()))
	}
	fmt.Printf("(medians of %d rounds, peak RSS after the first; server CPU per call by round:", rounds)
	for i, r := range rs {
		fmt.Printf(" %s", r.name)
		for _, f := range per[i] {
			fmt.Printf(" %.0f", float64(f.cpuPerCall.Microseconds()))
		}
		fmt.Printf(" µs%s", map[bool]string{true: ";", false: ")\n"}[i < len(rs)-1])
	}
	return res
}

// medians returns the median of each figure over rounds.
func medians(rounds []figures) figures {
	med := func(get func(figures) float64) float64 {
		v := make([]float64, len(rounds))
		for i, f := range rounds {
			v[i] = get(f)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	d := func(get func(figures) time.Duration) time.Duration {
		return time.Duration(med(func(f figures) float64 { return float64(get(f)) }))
	}
	return figures{
		seqRate: med(func(f figures) float64 { return f.seqRate }),
		seqP50:  d(func(f figures) time.Duration { return f.seqP50 }),
		seqP99:  d(func(f figures) time.Duration { return f.seqP99 }),
		parRate: med(func(f figures) float64 { return f.parRate }),
		parP50:  d(func(f figures) time.Duration { return f.parP50 }),
		parP99:  d(func(f figures) time.Duration { return f.parP99 }),

		cpuPerCall:    d(func(f figures) time.Duration { return f.cpuPerCall }),
		seqCPU:        d(func(f figures) time.Duration { return f.seqCPU }),
		parCPU:        d(func(f figures) time.Duration { return f.parCPU }),
		clientPerCall: d(func(f figures) time.Duration { return f.clientPerCall }),
	}
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	defer ln.Close()
	return ln.Addr().String()
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", d.Seconds()*1000) }

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpbench:", err)
		os.Exit(1)
	}
}

// running is a started server with a client session.
type running struct {
	server
	cmd   *exec.Cmd
	cs    *mcp.ClientSession
	init  time.Duration // from start to the initialize answer
	close func()
}

// start starts the server, times initialize and warms it up.
func start(s server) *running {
	r := &running{server: s, cmd: s.cmd()}
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpbench", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	t0 := time.Now()
	var t mcp.Transport = &mcp.CommandTransport{Command: r.cmd}
	stop := func() {}
	if s.url != "" {
		check(r.cmd.Start())
		stop = func() {
			r.cmd.Process.Kill()
			r.cmd.Wait()
		}
		waitHTTP(s.url)
		t = &mcp.StreamableClientTransport{Endpoint: s.url, DisableStandaloneSSE: true}
	}
	cs, err := client.Connect(context.Background(), t, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	check(err)
	r.cs, r.init = cs, time.Since(t0)
	r.close = func() {
		cs.Close()
		stop()
	}
	for range 50 { // warm-up
		r.call()
	}
	return r
}

func (r *running) call() time.Duration {
	t0 := time.Now()
	res, err := r.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: r.tool, Arguments: r.args})
	check(err)
	if res.IsError {
		check(fmt.Errorf("%s: %s returned an error: %v", r.name, r.tool, res.Content))
	}
	return time.Since(t0)
}

// round runs n calls one at a time, then n with conc in flight, and
// returns their figures (all but init and peakKB).
func (r *running) round(n, conc int) figures {
	var f figures
	cpu0, self0 := cpuTime(r.cmd.Process.Pid), cpuTime(os.Getpid())
	lat := make([]time.Duration, n)
	t0 := time.Now()
	for i := range n {
		lat[i] = r.call()
	}
	f.seqRate = float64(n) / time.Since(t0).Seconds()
	f.seqP50, f.seqP99 = benchrun.Percentile(lat, 50), benchrun.Percentile(lat, 99)
	cpu1 := cpuTime(r.cmd.Process.Pid)
	f.seqCPU = (cpu1 - cpu0) / time.Duration(n)

	lat = make([]time.Duration, n)
	var wg sync.WaitGroup
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	t0 = time.Now()
	for range conc {
		wg.Go(func() {
			for i := range next {
				lat[i] = r.call()
			}
		})
	}
	wg.Wait()
	f.parRate = float64(n) / time.Since(t0).Seconds()
	f.parP50, f.parP99 = benchrun.Percentile(lat, 50), benchrun.Percentile(lat, 99)
	cpu2 := cpuTime(r.cmd.Process.Pid)
	f.parCPU = (cpu2 - cpu1) / time.Duration(n)
	f.cpuPerCall = (cpu2 - cpu0) / time.Duration(2*n)
	f.clientPerCall = (cpuTime(os.Getpid()) - self0) / time.Duration(2*n)
	return f
}

// waitHTTP waits until something answers HTTP at url (any status).
func waitHTTP(url string) {
	for range 500 {
		if res, err := http.Get(url); err == nil {
			res.Body.Close()
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	check(fmt.Errorf("nothing answers at %s after 5 s", url))
}

// cpuTime reads a process's CPU time so far (user + system, all threads).
func cpuTime(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	check(err)
	// pid (comm) state ppid …: comm may hold spaces, the last ")" ends it;
	// utime and stime are fields 14 and 15, in clock ticks (100 a second).
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	var user, sys int64
	fmt.Sscan(f[11], &user)
	fmt.Sscan(f[12], &sys)
	return time.Duration(user+sys) * 10 * time.Millisecond
}

// vmHWM reads a process's peak resident set size in KiB.
func vmHWM(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	check(err)
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			var kb int
			fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
			return kb
		}
	}
	check(fmt.Errorf("no VmHWM in /proc/%d/status", pid))
	return 0
}
