package main

// The timeline mode (-only timeline): where the time of one relayed call
// goes, hop by hop, from the kernel's view of the pipes. While this
// process makes sequential calls to the targets in turn (as goal 1's
// one-at-a-time phase does; in a shuffled order each round), `perf
// record -a` records every read(2) and write(2) on the machine (entry and
// exit); the events
// of this process, the gateway and the Node server on the pipes between
// them (each process's fds learnt from /proc/PID/fd: the fds whose link is
// the same pipe as a known end, so dup'ed fds count too) are put in order,
// and each call is the chain
//
//	A client writes the request         (entry of write)
//	B gateway's read returns it          (exit of read, > 0 bytes)
//	C gateway writes it to Node          (entry of write)
//	D Node's read returns it             (exit of read, > 0 bytes)
//	E Node writes the answer             (entry of write)
//	F gateway's read returns it          (exit of read, > 0 bytes)
//	G gateway writes it to the client    (entry of write)
//	H client's read returns it           (exit of read, > 0 bytes)
//
// and, called directly, A, D, E, H. Each hop's p50 and p90 are printed,
// for the gateway (and each -compare build, bare), for the floor relay in
// its place (bench/proxy/relay: "gateway" in its hops is the relay) and
// directly. The relay's own time
// is a few µs; the wake-ups beside it show what the gateway's add beyond
// the hop itself: a pipe write wakes its reader on the writer's CPU when
// it can, so what a process does after its write, before it sleeps, is
// in the next hop.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/toolgate/toolgate/internal/benchrun"
)

// step is one point of a call's chain: a process's read or write on one
// of a set of fds.
type step struct {
	name  string // "A".."H"
	pid   int
	write bool
	fds   map[int]bool
}

// hop is the text printed for the time between two steps.
type hop struct{ from, to, what string }

var (
	viaHops = []hop{
		{"A", "B", "wake: client write -> gateway read"},
		{"B", "C", "gateway, request side"},
		{"C", "D", "wake: gateway write -> Node read"},
		{"D", "E", "Node"},
		{"E", "F", "wake: Node write -> gateway read"},
		{"F", "G", "gateway, reply side (incl. the audit append)"},
		{"G", "H", "wake: gateway write -> client read"},
		{"A", "H", "total"},
	}
	directHops = []hop{
		{"A", "D", "wake: client write -> Node read"},
		{"D", "E", "Node"},
		{"E", "H", "wake: Node write -> client read"},
		{"A", "H", "total"},
	}
)

// perfEvents are the events recorded, each excluding perf's own (without
// it perf records its own writes of what it recorded: ~800,000 events a
// second on this machine, a CPU busy with perf).
var perfEvents = func() []string {
	var a []string
	for _, e := range []string{"sys_enter_write", "sys_exit_write", "sys_enter_read", "sys_exit_read"} {
		a = append(a, "-e", "syscalls:"+e, "--exclude-perf")
	}
	return a
}()

// timeline measures direct and each of vias (a process with the upstream
// as its child: the gateway, the floor relay) with n sequential calls each
// under perf, and prints the hops of each.
func timeline(ctx context.Context, direct *target, vias []*target, n, warm int, work string) {
	if _, err := exec.LookPath("perf"); err != nil {
		check(fmt.Errorf("-only timeline needs perf (Debian: apt-get install linux-perf), run as root: %v", err))
	}
	if os.Geteuid() != 0 {
		check(fmt.Errorf("-only timeline needs root (perf record -a on syscall tracepoints)"))
	}
	me := os.Getpid()
	targets := append(slices.Clone(vias), direct)
	res := make([]map[string][]time.Duration, len(targets))
	calls := make([]int, len(targets))
	fdsText := make([]string, len(targets))
	steps := make([][]step, len(targets))
	for i, t := range targets {
		t.connect(ctx)
		for range warm {
			t.call(ctx)
		}
		p := t.cmd.Process.Pid
		if t != direct {
			u := child(p)
			steps[i] = []step{
				{"A", me, true, sameFds(me, p, 0)},
				{"B", p, false, sameFds(p, p, 0)},
				{"C", p, true, sameFds(p, u, 0)},
				{"D", u, false, sameFds(u, u, 0)},
				{"E", u, true, sameFds(u, u, 1)},
				{"F", p, false, sameFds(p, u, 1)},
				{"G", p, true, sameFds(p, p, 1)},
				{"H", me, false, sameFds(me, p, 1)},
			}
		} else {
			steps[i] = []step{
				{"A", me, true, sameFds(me, p, 0)},
				{"D", p, false, sameFds(p, p, 0)},
				{"E", p, true, sameFds(p, p, 1)},
				{"H", me, false, sameFds(me, p, 1)},
			}
		}
		for _, s := range steps[i] {
			fdsText[i] += fmt.Sprintf(" %s pid %d fd %s;", s.name, s.pid, fdList(s.fds))
		}
	}
	// The targets in turn, as goal 1's one-at-a-time phase calls them:
	// each process idles while the others are called, and its call finds
	// its code and data as that phase's calls do (back to back, the same
	// target's calls would find them warm). Each round takes them in
	// another order, shuffled: a gateway called right after another of
	// the same executable finds their shared code warmer than one called
	// after Node, and a fixed order would give that to one target. One
	// trace holds them all; each target's chains are its own pids' and
	// fds' events.
	data := filepath.Join(work, "timeline.data")
	rng := rand.New(rand.NewPCG(1, 2))
	order := slices.Clone(targets)
	record(data, func() {
		for range n {
			rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			for _, t := range order {
				t.call(ctx)
			}
		}
	})
	trace := script(data)
	for i, t := range targets {
		hops := viaHops
		if t == direct {
			hops = directHops
		}
		chains := parse(bytes.NewReader(trace), steps[i])
		calls[i] = len(chains)
		res[i] = map[string][]time.Duration{}
		for _, h := range hops {
			for _, c := range chains {
				res[i][h.from+h.to] = append(res[i][h.from+h.to], c[h.to]-c[h.from])
			}
		}
		t.cs.Close()
	}
	fmt.Printf("timeline of a sequential read_text_file call (%d made per target, the targets in turn, under perf record -a on read/write entry and exit; the complete chains counted)\n", n)
	pct := func(i int, k string, p int) float64 { return us(benchrun.Percentile(res[i][k], p)) }
	p50 := func(i int, k string) float64 { return pct(i, k, 50) }
	d := len(targets) - 1 // direct
	for i, t := range targets {
		hops := viaHops
		if i == d {
			hops = directHops
		}
		fmt.Printf("\n%s: %d calls\n  fds (from /proc/PID/fd):%s\n", t.name, calls[i], strings.TrimSuffix(fdsText[i], ";"))
		fmt.Printf("  %-5s %-46s %8s %8s\n", "hop", "", "p50 µs", "p90 µs")
		for _, h := range hops {
			fmt.Printf("  %s->%s  %-46s %8.1f %8.1f\n", h.from, h.to, h.what, p50(i, h.from+h.to), pct(i, h.from+h.to, 90))
		}
	}
	wakeDirect := p50(d, "AD") + p50(d, "EH")
	fmt.Println("\n(sums of p50s; \"gateway\" in the hops is the process between client and Node)")
	for i, t := range targets[:d] {
		wake := p50(i, "AB") + p50(i, "CD") + p50(i, "EF") + p50(i, "GH")
		fmt.Printf("%s: adds B->C + F->G = %.1f µs of its own; the extra hop's wake-ups add (A->B + C->D + E->F + G->H) - (A->D + E->H) = %.1f - %.1f = %.1f µs; Node D->E %.1f via vs %.1f direct; total p50 %.1f via vs %.1f direct\n",
			t.name, p50(i, "BC")+p50(i, "FG"), wake, wakeDirect, wake-wakeDirect, p50(i, "DE"), p50(d, "DE"), p50(i, "AH"), p50(d, "AH"))
	}
	fmt.Println("perf's own cost is in every figure (~1-2 µs per event, 2 events per syscall); one run is one placement of the processes on the CPUs; differences of a few µs are not resolved")
}

// sameFds returns the fds of pid that are the same pipe as fd of other
// (the other end, or the same end: a pipe's two ends have one link).
func sameFds(pid, other, fd int) map[int]bool {
	want, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", other, fd))
	check(err)
	if !strings.HasPrefix(want, "pipe:") {
		check(fmt.Errorf("fd %d of process %d is %s, not a pipe", fd, other, want))
	}
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	check(err)
	fds := map[int]bool{}
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", pid, n)); err == nil && l == want {
			fds[n] = true
		}
	}
	if len(fds) == 0 {
		check(fmt.Errorf("process %d has no fd on %s", pid, want))
	}
	return fds
}

// record runs perf record -a into data while f runs.
func record(data string, f func()) {
	var stderr bytes.Buffer
	cmd := exec.Command("perf", append([]string{"record", "-a", "-o", data}, perfEvents...)...)
	cmd.Stderr = &stderr
	check(cmd.Start())
	time.Sleep(300 * time.Millisecond) // perf opens its events on every CPU: calls before that are not seen, nothing else
	f()
	check(cmd.Process.Signal(syscall.SIGINT))
	err := cmd.Wait()
	for line := range strings.Lines(stderr.String()) {
		if strings.Contains(line, "Lost") || strings.Contains(strings.ToLower(line), "error") {
			fmt.Fprint(os.Stderr, "perf: ", line)
		}
	}
	if _, serr := os.Stat(data); serr != nil {
		check(fmt.Errorf("perf record: %v: %s", err, stderr.String()))
	}
}

// script runs perf script on data: one line per event, in time order.
func script(data string) []byte {
	var out, stderr bytes.Buffer
	cmd := exec.Command("perf", "script", "--ns", "-i", data, "-F", "pid,tid,time,event,trace")
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		check(fmt.Errorf("perf script: %v: %s", err, stderr.String()))
	}
	return out.Bytes()
}

// parse reads perf script's lines ("PID/TID SEC.NS: syscalls:sys_enter_read:
// fd: 0x…, …" or "… syscalls:sys_exit_read: 0x…") and returns the complete
// chains of steps, each step's time in ns. A write is timed at its entry,
// a read at its exit, if it returned bytes. Calls are sequential: a chain
// starts at the first step and takes each next step's first event; a
// first step's event after the second step restarts it (an event lost),
// one before it is the same request's next write.
func parse(r io.Reader, steps []step) []map[string]time.Duration {
	lastFd := map[int]int{} // tid -> fd of its syscall in progress
	var chains []map[string]time.Duration
	var cur map[string]time.Duration
	k := 0 // index of the next step of cur
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 {
			continue
		}
		pidTid := strings.SplitN(f[0], "/", 2)
		if len(pidTid) != 2 {
			continue
		}
		pid, err1 := strconv.Atoi(pidTid[0])
		tid, err2 := strconv.Atoi(pidTid[1])
		t, err3 := nsTime(strings.TrimSuffix(f[1], ":"))
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		var write bool
		var fd int
		switch strings.TrimSuffix(f[2], ":") {
		case "syscalls:sys_enter_write":
			write = true
			fd = enterFd(f)
			lastFd[tid] = fd
		case "syscalls:sys_enter_read":
			lastFd[tid] = enterFd(f)
			continue
		case "syscalls:sys_exit_read":
			fdIn, ok := lastFd[tid]
			delete(lastFd, tid)
			ret, err := strconv.ParseUint(strings.TrimPrefix(f[3], "0x"), 16, 64)
			if !ok || err != nil || int64(ret) <= 0 {
				continue
			}
			fd = fdIn
		default:
			delete(lastFd, tid)
			continue
		}
		is := func(s step) bool { return s.pid == pid && s.write == write && s.fds[fd] }
		switch {
		case is(steps[0]) && k == 1: // the same request's next write
		case is(steps[0]):
			cur, k = map[string]time.Duration{steps[0].name: time.Duration(t)}, 1
		case cur != nil && is(steps[k]):
			cur[steps[k].name] = time.Duration(t)
			if k++; k == len(steps) {
				chains = append(chains, cur)
				cur, k = nil, 0
			}
		}
	}
	check(sc.Err())
	return chains
}

// enterFd is the fd of a sys_enter line ("… fd: 0x0000000c, buf: …").
func enterFd(f []string) int {
	for i, s := range f {
		if s == "fd:" && i+1 < len(f) {
			n, err := strconv.ParseUint(strings.TrimSuffix(f[i+1], ","), 0, 32)
			if err == nil {
				return int(n)
			}
		}
	}
	return -1
}

// nsTime parses "SEC.NANOSEC" into nanoseconds.
func nsTime(s string) (int64, error) {
	sec, frac, ok := strings.Cut(s, ".")
	if !ok || len(frac) != 9 {
		return 0, fmt.Errorf("time %q", s)
	}
	a, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return 0, err
	}
	b, err := strconv.ParseInt(frac, 10, 64)
	return a*1e9 + b, err
}

func fdList(fds map[int]bool) string {
	var a []string
	for _, fd := range slices.Sorted(maps.Keys(fds)) {
		a = append(a, strconv.Itoa(fd))
	}
	return strings.Join(a, ",")
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }
