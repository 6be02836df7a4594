package policy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode"
)

// Terminal asks a human at a terminal. Use it only when the terminal is
// not the MCP channel: for "toolgate call" with a TTY on stdin, never for
// "serve" over stdio. It shows the tool, its arguments (indented,
// truncated, control characters escaped so a call cannot paint over the
// screen), the rule and the level, and reads one line:
//
//	y  approve once        s  approve for this session
//	a  approve always      n  deny (then a reason, optional, for the model)
//
// A level-3 call (Decision.Confirm) offers only y and n, and after y asks
// for the tool's name or "yes" to be typed in full. Questions are asked
// one at a time; a cancelled context ends the wait (the answer is a
// denial).
type Terminal struct {
	f   *os.File
	in  *bufio.Reader
	out io.Writer
	mu  sync.Mutex
	// MaxArgs caps how many bytes of arguments are shown (0: 2000).
	MaxArgs int
}

// NewTerminal returns a Terminal that talks through tty (for example
// os.Stdin with os.Stderr, or /dev/tty opened read-write). It fails when tty
// is not a terminal.
func NewTerminal(tty *os.File, out io.Writer) (*Terminal, error) {
	if tty == nil || !isTerminal(tty) {
		return nil, errors.New("policy: approvals need a terminal, and this input is not one")
	}
	if out == nil {
		out = tty
	}
	return &Terminal{f: tty, in: bufio.NewReader(tty), out: out}, nil
}

// Approve asks the question and waits for the answer.
func (t *Terminal) Approve(ctx context.Context, req Request) (Approval, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return Approval{Approver: "terminal", Reason: "no answer: " + err.Error()}, nil
	}
	max := t.MaxArgs
	if max <= 0 {
		max = 2000
	}
	d := req.Decision
	var b strings.Builder
	fmt.Fprintf(&b, "\n── toolgate: approve this call? ──\n")
	fmt.Fprintf(&b, "tool:      %s (level %d)\n", safeText(req.Call.Name), d.Level)
	if req.Call.Principal != "" {
		fmt.Fprintf(&b, "caller:    %s\n", safeText(req.Call.Principal))
	}
	fmt.Fprintf(&b, "why asked: %s [%s]\n", safeText(d.Reason), safeText(d.Rule))
	fmt.Fprintf(&b, "arguments:\n%s\n", indent(safeText(prettyArgs(req.Call.Args, max)), "  "))
	choices := "[y] once  [s] this session  [n] deny"
	if d.Confirm {
		choices = "[y] once  [n] deny   (level 3: you will be asked to confirm)"
	} else if len(req.AlwaysRules) > 0 {
		fmt.Fprintf(&b, "always adds: %s\n", safeText(strings.Join(req.AlwaysRules, ", ")))
		choices = "[y] once  [s] this session  [a] always  [n] deny"
	}
	fmt.Fprintf(&b, "%s > ", choices)
	io.WriteString(t.out, b.String())

	for {
		line, err := t.readLine(ctx)
		if err != nil {
			io.WriteString(t.out, "\n")
			return Approval{Approver: "terminal", Reason: "no answer: " + err.Error()}, nil
		}
		switch strings.ToLower(line) {
		case "y", "yes":
			if d.Confirm {
				fmt.Fprintf(t.out, "type %q or \"yes\" to run this level-3 call > ", req.Call.Name)
				conf, err := t.readLine(ctx)
				if err != nil || conf != req.Call.Name && conf != "yes" {
					io.WriteString(t.out, "not confirmed: denied\n")
					return Approval{Approver: "terminal", Reason: "the user did not confirm this level-3 call"}, nil
				}
			}
			return Approval{Approved: true, Approver: "terminal", Scope: Once}, nil
		case "s":
			if !d.Confirm {
				return Approval{Approved: true, Approver: "terminal", Scope: Session}, nil
			}
		case "a":
			if !d.Confirm && len(req.AlwaysRules) > 0 {
				return Approval{Approved: true, Approver: "terminal", Scope: Always}, nil
			}
		case "n", "no":
			io.WriteString(t.out, "reason for the model (optional) > ")
			reason, _ := t.readLine(ctx)
			return Approval{Approver: "terminal", Reason: reason}, nil
		}
		fmt.Fprintf(t.out, "please answer %s > ", choices)
	}
}

// readLine reads one line, giving up when ctx ends.
func (t *Terminal) readLine(ctx context.Context) (string, error) {
	stop := context.AfterFunc(ctx, func() { t.f.SetReadDeadline(time.Now()) })
	defer func() {
		stop()
		t.f.SetReadDeadline(time.Time{})
	}()
	line, err := t.in.ReadString('\n')
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		if line == "" {
			return "", err
		}
	}
	return strings.TrimSpace(line), nil
}

// safeText escapes control characters (terminal escape sequences) except
// newlines and tabs.
func safeText(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r):
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}
