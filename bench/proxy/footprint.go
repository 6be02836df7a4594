package main

// The footprint mode (-only footprint): how much of the gateway's code one
// relayed call runs, against the floor relay's. One at a time (bench/proxy's
// sequential phase, and an agent's calls, seconds apart) each call finds
// the gateway's code cold: the upstream ran in between and took the CPU's
// caches. What a call then costs beyond its instructions grows with the
// distinct code it runs, its footprint, which callgrind counts exactly
// (no hardware counter needed): each target runs under
// `valgrind --tool=callgrind --dump-instr=yes`, gets -warm calls, its
// counts are zeroed (callgrind_control -z), it gets n calls, and its counts
// are dumped (-d). The dump gives the instructions a call and every
// instruction address run; the footprint is the number of distinct 64-byte
// lines those addresses fall in, in all and by package. valgrind's
// virtual CPU has no SHA extensions: the audit's SHA-256 runs its AVX2
// code there, about ten times the instructions it takes on a CPU with
// them (and other code than there).

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// codeLine is the size of the lines the footprint counts: a cache line.
const codeLine = 64

// footprint measures each target under callgrind and prints what a call runs.
func footprint(ctx context.Context, targets []*target, n, warm int, work string) {
	for _, tool := range []string{"valgrind", "callgrind_control"} {
		if _, err := exec.LookPath(tool); err != nil {
			check(fmt.Errorf("-only footprint needs valgrind (Debian: apt-get install valgrind): %v", err))
		}
	}
	fmt.Printf("code footprint of a relayed read_text_file call (callgrind: %d calls after %d; distinct %d-byte code lines run)\n", n, warm, codeLine)
	for i, t := range targets {
		out := filepath.Join(work, fmt.Sprintf("callgrind-%d.out", i))
		argv := append([]string{"valgrind", "--tool=callgrind", "--dump-instr=yes", "--separate-threads=no", "--callgrind-out-file=" + out}, t.cmd.Args...)
		t.cmd = command(argv)
		// Go's asynchronous preemption signals valgrind's slow threads
		// for nothing.
		t.cmd.Env = append(os.Environ(), "GODEBUG=asyncpreemptoff=1")
		// valgrind's and the target's messages (callgrind may fail an
		// assertion on the signal that ends the target, after the dump).
		log, err := os.Create(out + ".log")
		check(err)
		defer log.Close()
		t.cmd.Stderr = log
		t.connect(ctx)
		for range warm {
			t.call(ctx)
		}
		control := func(arg string) {
			c := exec.Command("callgrind_control", arg, strconv.Itoa(t.cmd.Process.Pid))
			if b, err := c.CombinedOutput(); err != nil {
				check(fmt.Errorf("callgrind_control %s: %v: %s", arg, err, b))
			}
		}
		control("-z")
		for range n {
			t.call(ctx)
		}
		control("-d")
		t.cs.Close()
		f, err := os.Open(out + ".1")
		check(err)
		fp, err := readFootprint(f)
		f.Close()
		check(err)
		fmt.Printf("\n%s: %.1f K instructions a call, %d code lines (%.0f KiB)\n", t.name, float64(fp.instructions)/float64(n)/1000, fp.lines, float64(fp.lines*codeLine)/1024)
		for _, p := range fp.packages {
			if p.lines*100 < fp.lines {
				break
			}
			fmt.Printf("  %6.1f KiB  %s\n", float64(p.lines*codeLine)/1024, p.name)
		}
	}
	fmt.Println("\none at a time, each call finds these lines cold (the upstream ran in between): its cost beyond its instructions grows with them")
}

// codeFootprint is what a callgrind dump says was run: its instructions,
// its distinct code lines, and theirs by package, most first.
type codeFootprint struct {
	instructions int64
	lines        int
	packages     []packageLines
}

type packageLines struct {
	name  string
	lines int
}

// readFootprint reads a callgrind dump made with --dump-instr=yes (its
// positions "instr line"): the summary, and the instruction address of
// every cost line, with the function it belongs to. Addresses are
// absolute (0x…), relative to the one before (+N, -N) or the same (*);
// a function is named at its first mention, by fn= or cfn=, and later by
// its number alone.
func readFootprint(r io.Reader) (codeFootprint, error) {
	var fp codeFootprint
	names := map[string]string{} // "(id)" -> function
	fn := ""
	var addr int64
	lines := map[int64]string{} // code line -> package of the first function seen in it
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case l == "":
		case strings.HasPrefix(l, "summary:"):
			v, err := strconv.ParseInt(strings.TrimSpace(l[len("summary:"):]), 10, 64)
			if err != nil {
				return fp, fmt.Errorf("summary: %v", err)
			}
			fp.instructions = v
		case strings.HasPrefix(l, "fn="), strings.HasPrefix(l, "cfn="):
			id, name, _ := strings.Cut(l[strings.IndexByte(l, '=')+1:], " ")
			if name != "" {
				names[id] = name
			}
			if l[0] == 'f' {
				fn = names[id]
			}
		case strings.ContainsRune("0123456789+-*", rune(l[0])):
			pos, _, _ := strings.Cut(l, " ")
			a, err := position(pos, addr)
			if err != nil {
				return fp, err
			}
			addr = a
			if _, ok := lines[a/codeLine]; !ok {
				lines[a/codeLine] = packageOf(fn)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fp, err
	}
	if fp.instructions == 0 {
		return fp, fmt.Errorf("no summary: not a callgrind dump")
	}
	fp.lines = len(lines)
	count := map[string]int{}
	for _, p := range lines {
		count[p]++
	}
	for name, n := range count {
		fp.packages = append(fp.packages, packageLines{name, n})
	}
	slices.SortFunc(fp.packages, func(a, b packageLines) int {
		return cmp.Or(cmp.Compare(b.lines, a.lines), strings.Compare(a.name, b.name))
	})
	return fp, nil
}

// position reads an instruction position of a callgrind dump, relative to
// the one before, last.
func position(s string, last int64) (int64, error) {
	base := int64(0)
	switch s[0] {
	case '*':
		return last, nil
	case '+':
		base, s = last, s[1:]
	case '-':
		v, err := strconv.ParseInt(s[1:], 0, 64)
		return last - v, err
	}
	v, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		return 0, fmt.Errorf("position %q: %v", s, err)
	}
	return base + v, nil
}

// goPackage finds the package of a Go function's symbol: the import path
// up to the last slash, then the name up to the first dot.
var goPackage = regexp.MustCompile(`^((?:[^/ ]*/)*[^./ ]+)\.`)

// packageOf is the package of a function named in a dump ("runtime.park_m",
// "github.com/x/y.(*T).f'2", "memeqbody" for assembly without a package),
// with the module prefixes shortened.
func packageOf(fn string) string {
	fn, _, _ = strings.Cut(fn, " ")
	m := goPackage.FindStringSubmatch(fn)
	if m == nil {
		return fn
	}
	p := m[1]
	p = strings.Replace(p, "github.com/toolgate/toolgate/", "toolgate/", 1)
	p = strings.Replace(p, "github.com/modelcontextprotocol/go-sdk/", "go-sdk/", 1)
	return p
}
