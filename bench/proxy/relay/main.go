// Command relay is the floor of a stdio relay, for bench/proxy: it starts
// its arguments as a child and copies lines from its standard input to the
// child's and from the child's standard output to its own, a goroutine per
// direction, and does nothing else (no decoding, no check, no log). What
// it adds to a call in a run of bench/proxy is what any process between a
// client and its server adds on that machine: the extra hop's wake-ups and
// copies. bench/proxy prints it beside the gateway's figures, so that a
// run shows how much of the gateway's cost is the hop and how much its
// own.
//
//	relay COMMAND [ARG]...
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: relay COMMAND [ARG]...")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	check(err)
	out, err := cmd.StdoutPipe()
	check(err)
	check(cmd.Start())
	go func() {
		copyLines(os.Stdout, out)
		os.Exit(0) // the child closed its output: nothing more to relay
	}()
	copyLines(in, os.Stdin)
	in.Close()
	cmd.Wait()
}

// copyLines writes each line of r to w as it comes, one write a line (a
// line longer than the buffer in pieces), until r ends or w fails.
func copyLines(w io.Writer, r io.Reader) {
	br := bufio.NewReaderSize(r, 1<<16)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			if _, werr := w.Write(line); werr != nil {
				return
			}
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		os.Exit(1)
	}
}
