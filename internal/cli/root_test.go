package cli

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
)

// TestRootMakesOneCommand checks that a command line naming a subcommand,
// for which newRoot makes only that one, gets what the root with every
// command gives it: the same output, errors and exit status for its help,
// its subcommands' help, unknown flags and subcommands, missing arguments;
// and that commands lists exactly the subcommands, by their names.
func TestRootMakesOneCommand(t *testing.T) {
	full := newRoot(&streams{}, nil)
	var names []string
	for _, c := range full.Commands() {
		if c.Name() == "help" || c.Name() == "completion" {
			continue // cobra's own, added when the root runs
		}
		names = append(names, c.Name())
		if len(c.Aliases) > 0 {
			t.Errorf("%s has aliases %v: newRoot looks commands up by name only", c.Name(), c.Aliases)
		}
	}
	var listed []string
	for _, c := range commands {
		listed = append(listed, c.name)
	}
	slices.Sort(names)
	slices.Sort(listed)
	if !slices.Equal(names, listed) {
		t.Fatalf("commands lists %v, the root has %v", listed, names)
	}

	var lines [][]string
	for _, c := range full.Commands() {
		name := c.Name()
		lines = append(lines, []string{name, "--help"}, []string{name, "-h"}, []string{name, "--no-such-flag"},
			[]string{name, "--root"}, []string{"help", name}, []string{name, "no-such-subcommand", "--help"})
		for _, sub := range c.Commands() {
			lines = append(lines, []string{name, sub.Name(), "--help"}, []string{name, sub.Name(), "--no-such-flag"})
		}
	}
	lines = append(lines, []string{}, []string{"--help"}, []string{"help"}, []string{"cal"}, []string{"completion", "bash"},
		[]string{"--no-such-flag", "call"}, []string{"call"}, []string{"audit", "verify", "a", "b", "c"}, []string{"version", "extra"})
	for _, args := range lines {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			run := func(all bool) (int, string, string) {
				var out, errOut bytes.Buffer
				s := &streams{in: strings.NewReader(""), out: &out, err: &errOut, args: args}
				which := args
				if all {
					which = nil
				}
				code := execute(context.Background(), newRoot(s, which), s)
				return code, out.String(), errOut.String()
			}
			code, out, errOut := run(false)
			wantCode, wantOut, wantErr := run(true)
			if code != wantCode || out != wantOut || errOut != wantErr {
				t.Errorf("one command: exit %d\n%s%s\nevery command: exit %d\n%s%s", code, out, errOut, wantCode, wantOut, wantErr)
			}
			if out+errOut == "" {
				t.Error("no output: the line tests nothing")
			}
		})
	}
}
