//go:build linux

package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBwrapBackend(t *testing.T) {
	e := newEnv(t)
	outside := filepath.Join(e.parent, "outside.txt")
	must(t, os.WriteFile(outside, []byte("OUTSIDE-SECRET"), 0o644))
	b := &Bwrap{}
	run := func(cmd string) Outcome {
		t.Helper()
		o, err := b.Run(context.Background(), Spec{Shell: cmd, Root: e.ws})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	if o := run("go version; python3 -c 'print(1)'; echo hi > f; cat f"); o.ExitCode != 0 || !strings.Contains(string(o.Stdout), "go version") || !strings.Contains(string(o.Stdout), "hi") {
		t.Fatalf("benign: %d %s %s", o.ExitCode, o.Stdout, o.Stderr)
	}
	for _, cmd := range []string{
		"cat /etc/shadow", "cat " + outside, "echo x > " + outside + " && cat " + outside,
		"python3 -c 'import socket; socket.socket()'", "mount -t tmpfs none /tmp", "touch /usr/x",
	} {
		o := run(cmd)
		// The write lands in the sandbox's own /tmp, which holds the
		// test's workspace (checked on the host below).
		if o.ExitCode == 0 && !strings.Contains(cmd, "echo x") || strings.Contains(string(o.Stdout), "OUTSIDE-SECRET") {
			t.Errorf("%s: exit %d\n%s%s", cmd, o.ExitCode, o.Stdout, o.Stderr)
		}
	}
	if b, _ := os.ReadFile(outside); string(b) != "OUTSIDE-SECRET" {
		t.Fatalf("outside changed: %q", b)
	}
	if _, err := b.Run(context.Background(), Spec{Shell: "true", Root: e.ws, Network: Network{Proxy: "127.0.0.1:1"}}); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("proxy under bwrap: %v", err)
	}
	if _, err := (&Bwrap{Path: "/nonexistent/bwrap"}).Run(context.Background(), Spec{Shell: "true", Root: e.ws}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("missing bwrap: %v", err)
	}
}

func TestChainAndDryRun(t *testing.T) {
	e := newEnv(t)
	spec := Spec{Shell: "echo ran > marker", Root: e.ws}
	missing := &Bwrap{Path: "/nonexistent/bwrap"}

	o, err := NewChain(missing, &Native{}).Run(context.Background(), spec)
	if err != nil || o.Backend != "native" || len(o.Skipped) != 1 || !strings.HasPrefix(o.Skipped[0], "bwrap: ") {
		t.Fatalf("chain: %+v %v", o, err)
	}
	must(t, os.Remove(filepath.Join(e.ws, "marker")))

	o, err = NewChain(missing, DryRun{}).Run(context.Background(), spec)
	if err != nil || !o.DryRun || o.Backend != "dry-run" || strings.Join(o.Command, " ") != "/bin/sh -c echo ran > marker" {
		t.Fatalf("dry-run: %+v %v", o, err)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "marker")); err == nil {
		t.Fatal("the dry run ran the command")
	}
	if _, err := NewChain(missing).Run(context.Background(), spec); !errors.Is(err, ErrRefused) {
		t.Fatalf("no backend: %v, want ErrRefused", err)
	}
	// An invalid spec stops the chain at once.
	if _, err := NewChain(&Native{}, DryRun{}).Run(context.Background(), Spec{Shell: "ls", Root: e.ws, Dir: "../"}); !errors.Is(err, ErrInvalidSpec) {
		t.Fatalf("invalid spec: %v", err)
	}
	// The proxy network skips bwrap.
	o, err = NewChain(&Bwrap{}, DryRun{}).Run(context.Background(), Spec{Shell: "true", Root: e.ws, Network: Network{Proxy: "127.0.0.1:1"}})
	if err != nil || o.Backend != "dry-run" {
		t.Fatalf("proxy chain: %+v %v", o, err)
	}
}
