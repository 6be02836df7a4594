package policy_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/toolgate/toolgate/policy"
)

// screen collects what the terminal shows on the pty's controller side.
type screen struct {
	mu  sync.Mutex
	buf bytes.Buffer
	ch  chan struct{}
}

func (s *screen) run(f *os.File) {
	b := make([]byte, 4096)
	for {
		n, err := f.Read(b)
		s.mu.Lock()
		s.buf.Write(b[:n])
		s.mu.Unlock()
		select {
		case s.ch <- struct{}{}:
		default:
		}
		if err != nil {
			return
		}
	}
}

// waitFor blocks until the screen shows text (or the test's deadline).
func (s *screen) waitFor(t *testing.T, text string) string {
	t.Helper()
	for {
		s.mu.Lock()
		got := s.buf.String()
		s.mu.Unlock()
		if strings.Contains(got, text) {
			return got
		}
		select {
		case <-s.ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("the terminal never showed %q; it shows:\n%s", text, got)
		}
	}
}

func (s *screen) reset() {
	s.mu.Lock()
	s.buf.Reset()
	s.mu.Unlock()
}

func TestTerminalThroughAPty(t *testing.T) {
	ctrl, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ctrl.Close()
	defer tty.Close()
	term, err := policy.NewTerminal(tty, tty)
	if err != nil {
		t.Fatal(err)
	}
	sc := &screen{ch: make(chan struct{}, 1)}
	go sc.run(ctrl)

	ask := func(req policy.Request, answers ...string) policy.Approval {
		t.Helper()
		sc.reset()
		done := make(chan policy.Approval, 1)
		go func() {
			a, err := term.Approve(context.Background(), req)
			if err != nil {
				t.Error(err)
			}
			done <- a
		}()
		for _, ans := range answers { // each answer follows a prompt ending in "> "
			sc.waitFor(t, "> ")
			sc.reset()
			ctrl.Write([]byte(ans + "\n"))
		}
		return <-done
	}

	req := askReq(defGH, `{"title":"hello \u001b[2J world","body":"`+strings.Repeat("x", 3000)+`"}`, "s")
	req.AlwaysRules = []string{"github__create_issue"}
	sc.reset()
	done := make(chan policy.Approval, 1)
	go func() { a, _ := term.Approve(context.Background(), req); done <- a }()
	shown := sc.waitFor(t, "[a] always")
	for _, want := range []string{"github__create_issue", "level 2", "level:2", `"title"`, "more bytes", "always adds: github__create_issue", `\u001b[2J`} {
		if !strings.Contains(shown, want) {
			t.Errorf("the question does not show %q:\n%s", want, shown)
		}
	}
	if strings.Contains(shown, "\x1b[2J") {
		t.Error("an escape sequence from the arguments reached the terminal")
	}
	ctrl.Write([]byte("s\n"))
	if a := <-done; !a.Approved || a.Scope != policy.Session || a.Approver != "terminal" {
		t.Errorf("s: %+v", a)
	}

	if a := ask(req, "maybe", "a"); !a.Approved || a.Scope != policy.Always {
		t.Errorf("a after a bad answer: %+v", a)
	}
	if a := ask(req, "n", "use the web UI"); a.Approved || a.Reason != "use the web UI" {
		t.Errorf("n: %+v", a)
	}
	del := askReq(defDel, `{"path":"x"}`, "s")
	if a := ask(del, "y", "delete_file"); !a.Approved || a.Scope != policy.Once {
		t.Errorf("level 3 confirmed: %+v", a)
	}
	if a := ask(del, "y", "yes"); !a.Approved {
		t.Errorf("level 3 confirmed with yes: %+v", a)
	}
	if a := ask(del, "y", "y"); a.Approved {
		t.Errorf("level 3 with a bare y: %+v", a)
	}
	if a := ask(del, "s", "a", "y", "nope"); a.Approved {
		t.Errorf("level 3 offers no session or always: %+v", a)
	}

	// a cancelled context ends the wait
	ctx, cancel := context.WithCancel(context.Background())
	sc.reset()
	go func() { a, _ := term.Approve(ctx, req); done <- a }()
	sc.waitFor(t, "> ")
	cancel()
	if a := <-done; a.Approved || !strings.Contains(a.Reason, "canceled") {
		t.Errorf("cancelled: %+v", a)
	}
	// and the terminal still works afterwards
	if a := ask(req, "y"); !a.Approved || a.Scope != policy.Once {
		t.Errorf("after a cancel: %+v", a)
	}
}

func TestTerminalRefusesANonTerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "x"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := policy.NewTerminal(f, nil); err == nil {
		t.Error("a regular file was taken for a terminal")
	}
	r, w, _ := os.Pipe()
	defer r.Close()
	defer w.Close()
	if _, err := policy.NewTerminal(r, w); err == nil {
		t.Error("a pipe was taken for a terminal")
	}
}
