//go:build linux

package sandbox

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
)

// TestNativeStarter: with Prestart, helpers are started by one starter and
// are this process's children; when the starter is killed (at once, or
// while commands run), the commands still run confined (a helper forked
// here, then a new starter), and Close leaves no starter, helper or group.
func TestNativeStarter(t *testing.T) {
	e := newEnv(t)
	for _, when := range []string{"between commands", "before the first command", "twice"} {
		t.Run(when, func(t *testing.T) {
			n := &Native{Prestart: true}
			defer n.Close()
			run := func(i int) {
				t.Helper()
				o, err := n.Run(context.Background(), Spec{Shell: fmt.Sprintf("echo $$ %d; test ! -e /tmp/mark && touch /tmp/mark", i), Root: e.ws})
				if err != nil {
					t.Fatalf("command %d: %v", i, err)
				}
				if o.ExitCode != 0 || strings.TrimSpace(string(o.Stdout)) != fmt.Sprintf("1 %d", i) {
					t.Fatalf("command %d: exit %d, signal %q, killed %q, wall %v, stdout %q, stderr %q", i, o.ExitCode, o.Signal, o.Killed, o.Usage.Wall, o.Stdout, o.Stderr)
				}
				p := o.Protections
				if !p.Seccomp || !p.NoNewPrivs || p.Capabilities != "none" || len(p.Namespaces) != 7 || p.Network != "none" {
					t.Fatalf("command %d: protections %+v", i, p)
				}
			}
			kill := func() {
				t.Helper()
				for _, pid := range waitChildren(t, starterArg0, 1) {
					must(t, syscall.Kill(pid, syscall.SIGKILL))
				}
			}
			if when == "before the first command" {
				n.Warm()
				kill()
			}
			for i := range 8 {
				run(i)
				if i == 2 || when == "twice" && i == 5 {
					kill()
				}
			}
			waitChildren(t, starterArg0, 1)
			n.Close()
			waitHelpers(t, 0)
			waitChildren(t, starterArg0, 0)
			if left := leftGroups(t); len(left) > 0 {
				t.Fatalf("groups left after Close: %v", left)
			}
		})
	}
}
