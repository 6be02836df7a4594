package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/tool"
)

// The lean path against net/http: each test sends the same bytes, over
// loopback, to a runner served by Serve and to one served by net/http with
// Handler (as Serve hands requests over), and wants the same outcome.

var leanSecret = []byte("runner-test-secret-0123")

// paths names the two ways a runner is served: Serve (lean) and net/http.
var paths = []struct {
	name string
	lean bool
}{{"net/http", false}, {"lean", true}}

// serveWith serves a runner with sandbox sb-a whose Call is call, by Serve
// (lean) or net/http, and returns its address.
func serveWith(t *testing.T, lean bool, call func(ctx context.Context, name string, args json.RawMessage) tool.Result) string {
	t.Helper()
	r, addr := serveRunner(t, Options{Open: calling(call)}, lean)
	if _, err := r.Ensure("sb-a"); err != nil {
		t.Fatal(err)
	}
	return addr
}

// serveRunner serves a runner of o (its Dir a temporary folder, its Secret
// leanSecret) on loopback until the test ends, by Serve (lean) or by
// net/http with Handler (as Serve hands requests over); it returns the
// runner and its address.
func serveRunner(t *testing.T, o Options, lean bool) (*Runner, string) {
	t.Helper()
	o.Dir, o.Secret = t.TempDir(), leanSecret
	r, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if lean {
		return r, serve(t, r)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: r.Handler(), ReadHeaderTimeout: headerTimeout, MaxHeaderBytes: 64 << 10}
	served := make(chan struct{})
	go func() { hs.Serve(ln); close(served) }()
	t.Cleanup(func() { hs.Close(); <-served })
	return r, ln.Addr().String()
}

// calling is Options.Open for sandboxes whose Call is call.
func calling(call func(ctx context.Context, name string, args json.RawMessage) tool.Result) func(id, ws string) (Sandbox, error) {
	return func(id, ws string) (Sandbox, error) {
		return Sandbox{MCP: http.NotFoundHandler(), Close: func() error { return nil }, Call: call}, nil
	}
}

// leanCall is a call of name with args: its head and its body.
func leanCall(name, args string) (head, body string) {
	body = `{"name":"` + name + `","arguments":` + args + `}`
	head = "POST /sandboxes/sb-a/call HTTP/1.1\r\nHost: runner\r\nAuthorization: Bearer " + Token(leanSecret, "sb-a") + "\r\n" +
		VersionHeader + ": " + CallVersion + "\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
	return head, body
}

// dialRunner connects to addr; reads fail after 5 s instead of hanging.
func dialRunner(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	return nc, bufio.NewReader(nc)
}

// readAnswer reads one answer: its status and body.
func readAnswer(br *bufio.Reader) (int, string, error) {
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, "", err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b), err
}

func echo(ctx context.Context, name string, args json.RawMessage) tool.Result {
	return tool.TextResult(name + " " + string(args))
}

// TestLeanBodyThenNext: a call whose body comes after its head (not in
// the head's read), in one write with the next call: both are answered.
// (The lean path once read the body, then dropped as many bytes more: the
// next call's.) The pause lets the runner read the head alone; were both
// read at once, the test would pass either way.
func TestLeanBodyThenNext(t *testing.T) {
	for _, p := range paths {
		nc, br := dialRunner(t, serveWith(t, p.lean, echo))
		h1, b1 := leanCall("first", `{"pad":"`+strings.Repeat("p", 200)+`"}`)
		h2, b2 := leanCall("second", `{}`)
		io.WriteString(nc, h1)
		time.Sleep(100 * time.Millisecond)
		io.WriteString(nc, b1+h2+b2)
		for _, want := range []string{"first", "second"} {
			if code, body, err := readAnswer(br); err != nil || code != 200 || !strings.Contains(body, want+" ") {
				t.Errorf("%s: the %s call: %d %q %v", p.name, want, code, body, err)
			}
		}
	}
}

// TestLeanNoSmuggling: a request that is, as any HTTP/1.1 reader frames
// it, the body of a pipelined request, is not run: the request around it
// (no token) is refused 401.
func TestLeanNoSmuggling(t *testing.T) {
	for _, p := range paths {
		ran := make(chan string, 4)
		addr := serveWith(t, p.lean, func(ctx context.Context, name string, args json.RawMessage) tool.Result {
			ran <- name
			return tool.TextResult(name)
		})
		nc, br := dialRunner(t, addr)
		hh, hb := leanCall("hidden", `{}`)
		hidden := hh + hb
		outer := func(pad int) string {
			return "POST /sandboxes/sb-a/call HTTP/1.1\r\nHost: runner\r\nX-Pad: " + strings.Repeat("p", pad) +
				"\r\nContent-Length: " + strconv.Itoa(len(hidden)) + "\r\n\r\n"
		}
		// The first call's body is exactly as long as the outer head.
		args := `{"pad":"` + strings.Repeat("q", len(outer(0))+300) + `"}`
		h1, b1 := leanCall("first", args)
		o := outer(len(b1) - len(outer(0)))
		io.WriteString(nc, h1)
		time.Sleep(100 * time.Millisecond)
		io.WriteString(nc, b1+o+hidden)
		for i, want := range []int{200, 401} {
			if code, body, err := readAnswer(br); err != nil || code != want {
				t.Errorf("%s: answer %d: %d %q %v, want %d", p.name, i, code, body, err, want)
			}
		}
		close(ran)
		for n := range ran {
			if n != "first" {
				t.Errorf("%s: ran %s", p.name, n)
			}
		}
	}
}

// TestLeanPanic: a panic while a call is served ends its connection, not
// the runner: the lean path answers 500 when nothing of the answer went
// out (net/http closes the connection unanswered), and a connection whose
// answer had begun is closed, by either path; the runner serves on.
func TestLeanPanic(t *testing.T) {
	for _, p := range paths {
		addr := serveWith(t, p.lean, func(ctx context.Context, name string, args json.RawMessage) tool.Result {
			switch name {
			case "late":
				tool.ReportProgress(ctx, 1, 2, "half")
				panic("boom after a report")
			case "boom":
				panic("boom")
			}
			return tool.TextResult(name)
		})
		for _, name := range []string{"boom", "late", "ok"} {
			nc, br := dialRunner(t, addr)
			h, b := leanCall(name, `{}`)
			io.WriteString(nc, h+b)
			code, body, err := readAnswer(br)
			switch {
			case name == "ok":
				if err != nil || code != 200 {
					t.Errorf("%s: a call after the panics: %d %q %v", p.name, code, body, err)
				}
			case name == "boom" && p.lean:
				if code != 500 || !strings.Contains(body, `"internal"`) {
					t.Errorf("%s: %s: %d %q %v, want 500", p.name, name, code, body, err)
				}
			default:
				if err == nil {
					t.Errorf("%s: %s: a whole answer %d %q", p.name, name, code, body)
				}
			}
		}
	}
}

// TestLeanNextDuringCall: a caller that sends its next call while one
// runs, watched for its close, gets both answered. (The lean path's watch
// once read a byte of the next call and closed the connection unanswered,
// the call run.)
func TestLeanNextDuringCall(t *testing.T) {
	for _, p := range paths {
		started, release := make(chan struct{}), make(chan struct{})
		addr := serveWith(t, p.lean, func(ctx context.Context, name string, args json.RawMessage) tool.Result {
			if name == "slow" {
				close(started)
				<-release
			}
			return tool.TextResult(name)
		})
		nc, br := dialRunner(t, addr)
		h1, b1 := leanCall("slow", `{}`)
		h2, b2 := leanCall("next", `{}`)
		io.WriteString(nc, h1+b1)
		<-started
		time.Sleep(50 * time.Millisecond) // the call is watched
		io.WriteString(nc, h2+b2)
		time.Sleep(50 * time.Millisecond) // the watch sees it
		close(release)
		for _, want := range []string{"slow", "next"} {
			if code, body, err := readAnswer(br); err != nil || code != 200 || !strings.Contains(body, want) {
				t.Errorf("%s: the %s call: %d %q %v", p.name, want, code, body, err)
				break
			}
		}
	}
}

// TestLeanCloseCancels: the caller's close cancels its call, also when it
// sent more with the call (in one write).
func TestLeanCloseCancels(t *testing.T) {
	for _, p := range paths {
		for _, more := range []string{"", "G"} {
			started, cancelled := make(chan struct{}), make(chan bool, 1)
			addr := serveWith(t, p.lean, func(ctx context.Context, name string, args json.RawMessage) tool.Result {
				close(started)
				select {
				case <-ctx.Done():
					cancelled <- true
				case <-time.After(5 * time.Second):
					cancelled <- false
				}
				return tool.TextResult(name)
			})
			nc, _ := dialRunner(t, addr)
			h, b := leanCall("w", `{}`)
			io.WriteString(nc, h+b+more)
			<-started
			nc.Close()
			if !<-cancelled {
				t.Errorf("%s: the caller closed (having sent %q more), the call ran on", p.name, more)
			}
		}
	}
}

// TestLeanSilent: a connection that sends nothing is closed after
// net/http's ReadHeaderTimeout (headerTimeout), by either path. (The lean
// path once held it for leanIdle.)
func TestLeanSilent(t *testing.T) {
	t.Parallel()
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			nc, err := net.Dial("tcp", serveWith(t, p.lean, echo))
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			nc.SetReadDeadline(time.Now().Add(headerTimeout + 3*time.Second))
			if _, err := nc.Read(make([]byte, 1)); err != io.EOF {
				t.Errorf("a silent connection after %v: %v, want EOF", headerTimeout+3*time.Second, err)
			}
		})
	}
}

// TestLeanAgrees: heads and bodies both paths answer alike: a Host
// net/http refuses (400, not run), a body with a value after the call's
// (400 invalid_request, not run).
func TestLeanAgrees(t *testing.T) {
	for _, p := range paths {
		ran := false
		addr := serveWith(t, p.lean, func(ctx context.Context, name string, args json.RawMessage) tool.Result {
			ran = true
			return tool.TextResult(name)
		})
		h, b := leanCall("x", `{}`)
		badHost := strings.Replace(h, "Host: runner", "Host: a b{}", 1) + b
		trailing := `{"name":"x","arguments":{}} {"name":"y"}`
		trailing = strings.Replace(h, "Content-Length: "+strconv.Itoa(len(b)), "Content-Length: "+strconv.Itoa(len(trailing)), 1) + trailing
		for _, c := range []struct{ name, req, want string }{
			{"a malformed Host", badHost, "Host"},
			{"a value after the call", trailing, "invalid_request"},
		} {
			nc, br := dialRunner(t, addr)
			io.WriteString(nc, c.req)
			if code, body, err := readAnswer(br); code != 400 || !strings.Contains(body, c.want) {
				t.Errorf("%s: %s: %d %q %v, want 400 %s", p.name, c.name, code, body, err, c.want)
			}
		}
		if ran {
			t.Errorf("%s: a call ran", p.name)
		}
	}
}

// TestServeConnectionCap: Serve holds at most Options.MaxConns connections
// at once, those it handed to net/http included. One beyond takes the
// slot of the oldest held connection on which no request showed a token
// (it is closed): connections that send nothing, or only what needs no
// token, cannot keep a gateway's calls out. It is answered 503, saying
// why, and closed only when every held connection has shown a token; once
// one of those closes, a new one is served. (The cap was taken before any
// token: MaxConns silent connections turned every call away with 503 for
// up to 20 s.)
func TestServeConnectionCap(t *testing.T) {
	r, addr := serveRunner(t, Options{MaxConns: 3, Open: calling(echo)}, true)
	if _, err := r.Ensure("sb-a"); err != nil {
		t.Fatal(err)
	}
	closed := func(br *bufio.Reader, what string) {
		t.Helper()
		if b, err := br.ReadByte(); err != io.EOF {
			t.Fatalf("%s: read %q, %v; want it closed", what, b, err)
		}
	}
	call := func(what string) net.Conn {
		t.Helper()
		nc, br := dialRunner(t, addr)
		head, body := leanCall("echo", `{"n":1}`)
		io.WriteString(nc, head+body)
		if code, got, err := readAnswer(br); err != nil || code != 200 || !strings.Contains(got, `echo {\"n\":1}`) {
			t.Fatalf("%s: %d %q %v", what, code, got, err)
		}
		return nc
	}
	// Three silent connections fill the cap (accepted in the order
	// dialled); calls on new connections take the slots of the oldest two,
	// while the third is held still.
	_, silent1 := dialRunner(t, addr)
	_, silent2 := dialRunner(t, addr)
	_, silent3 := dialRunner(t, addr)
	call1 := call("a call with three silent connections held")
	closed(silent1, "the oldest silent connection")
	call("a call with two silent connections held")
	closed(silent2, "the next silent connection")
	// A connection that showed no token (a probe, handed to net/http) goes
	// before any that did.
	probe, br := dialRunner(t, addr)
	closed(silent3, "the last silent connection")
	io.WriteString(probe, "GET /healthz HTTP/1.1\r\nHost: runner\r\n\r\n")
	if code, _, err := readAnswer(br); err != nil || code != 200 {
		t.Fatalf("the probe: %d %v", code, err)
	}
	// A request handed to net/http that shows a token keeps its connection.
	put, pbr := dialRunner(t, addr)
	io.WriteString(put, "PUT /sandboxes/sb-a HTTP/1.1\r\nHost: runner\r\nAuthorization: Bearer "+Token(leanSecret, "sb-a")+"\r\nContent-Length: 0\r\n\r\n")
	if code, _, err := readAnswer(pbr); err != nil || code != 200 {
		t.Fatalf("the PUT: %d %v", code, err)
	}
	closed(br, "the probe's kept connection")

	// Every held connection has shown a token: one more is refused.
	healthz := func(want int, why string) {
		t.Helper()
		// (A connection just closed may still be held a moment: dial again,
		// with no deadline; the test binary's timeout bounds it.)
		for ; ; time.Sleep(10 * time.Millisecond) {
			nc, br := dialRunner(t, addr)
			io.WriteString(nc, "GET /healthz HTTP/1.1\r\nHost: runner\r\nConnection: close\r\n\r\n")
			code, body, err := readAnswer(br)
			nc.Close()
			if err != nil {
				t.Fatalf("%s: %v", why, err)
			}
			if code == want {
				if code == 503 && !strings.Contains(body, "at most 3 connections") {
					t.Fatalf("%s: %s", why, body)
				}
				return
			}
		}
	}
	healthz(503, "three connections that showed a token held (two calls', a PUT's)")
	call1.Close()
	healthz(200, "one of them closed")
}

// TestServeIdleHandedConnection: a connection handed to net/http that
// showed a token is closed once idle for leanIdle after its request, as a
// lean one is (it was held with no idle limit, keeping its slot of
// Options.MaxConns for ever).
func TestServeIdleHandedConnection(t *testing.T) {
	defer func(d time.Duration) { leanIdle = d }(leanIdle)
	leanIdle = 50 * time.Millisecond
	r, addr := serveRunner(t, Options{MaxConns: 3, Open: calling(echo)}, true)
	if _, err := r.Ensure("sb-a"); err != nil {
		t.Fatal(err)
	}
	put, br := dialRunner(t, addr)
	io.WriteString(put, "PUT /sandboxes/sb-a HTTP/1.1\r\nHost: runner\r\nAuthorization: Bearer "+Token(leanSecret, "sb-a")+"\r\nContent-Length: 0\r\n\r\n")
	if code, _, err := readAnswer(br); err != nil || code != 200 {
		t.Fatalf("the PUT: %d %v", code, err)
	}
	put.SetReadDeadline(time.Now().Add(10 * time.Second)) // a bound on the test only
	if b, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("the idle connection: read %q, %v; want it closed", b, err)
	}
}

// TestEvictSparesRequestsIn: over the cap, the slot taken is that of the
// oldest connection that showed no token and has no request in: one whose
// request waits unread in its socket (a gateway's new connection whose
// reader has not run yet) or whose head was read whole and is being
// decided is spared, however old; when every one has a token or a request
// in, none is taken. Real loopback sockets: the request waits in the
// kernel's receive queue as it would under a flood. (Before, the oldest
// without a token was closed, the gateway's included.)
func TestEvictSparesRequestsIn(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accept := func(write string) net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		io.WriteString(c, write)
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	head, body := leanCall("echo", `{}`)
	gateway := accept(head + body)
	for !waiting(gateway) { // the test binary's timeout bounds the wait
		time.Sleep(time.Millisecond)
	}
	decided, silent1, silent2, proven := accept(""), accept(""), accept(""), accept("")
	l := &lean{slots: map[net.Conn]*slot{}}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, nc := range []net.Conn{gateway, decided, silent1, silent2, proven} {
		l.holdLocked(nc)
	}
	l.slots[decided].heard = true
	l.slots[proven].proven = true
	l.unproven.Remove(l.slots[proven].elem)
	l.slots[proven].elem = nil
	for _, want := range []net.Conn{silent1, silent2} {
		if !l.evictLocked() {
			t.Fatal("nothing evicted")
		}
		if _, held := l.slots[want]; held {
			t.Fatalf("%v held, want it evicted (the oldest silent one)", want.LocalAddr())
		}
		if _, err := want.Read(make([]byte, 1)); err == nil {
			t.Fatal("the evicted connection was not closed")
		}
	}
	if l.evictLocked() {
		t.Fatalf("evicted one of the gateway's, the decided or the proven connection: %d held", len(l.slots))
	}
	if len(l.slots) != 3 || l.unproven.Len() != 2 {
		t.Fatalf("%d held, %d unproven; want 3 and 2", len(l.slots), l.unproven.Len())
	}
}

// TestServeFloodKeepsGatewayCall: a gateway's call on a new connection,
// sent as it connects, is answered though a flood of silent connections
// (twice the cap) arrives right behind it each time; connections that
// sent only part of a head hold no slot against it.
func TestServeFloodKeepsGatewayCall(t *testing.T) {
	const limit = 4
	r, addr := serveRunner(t, Options{MaxConns: limit, Open: calling(echo)}, true)
	if _, err := r.Ensure("sb-a"); err != nil {
		t.Fatal(err)
	}
	for range limit {
		nc, _ := dialRunner(t, addr)
		io.WriteString(nc, "POST /sandboxes/sb-a/call HTTP/1.1\r\nHost: ru") // slow heads
	}
	head, body := leanCall("echo", `{"n":1}`)
	for round := range 20 {
		for ; ; time.Sleep(10 * time.Millisecond) { // no deadline: the test binary's timeout bounds it
			gw, br := dialRunner(t, addr)
			io.WriteString(gw, head+body)
			for range 2 * limit {
				dialRunner(t, addr)
			}
			code, got, err := readAnswer(br)
			gw.Close()
			if err == nil && code == 200 && strings.Contains(got, `echo {\"n\":1}`) {
				break
			}
			if err != nil || code != 503 {
				t.Fatalf("round %d: %d %q %v", round, code, got, err)
			}
			// 503: every held one had its request in a moment ago (the
			// slow heads not read yet): once read, they hold no slot.
		}
	}
}

// TestServeDecidedPeersHoldNoSlot: connections whose first request was
// answered without a token hold no slot against a gateway's call, even with
// requests waiting unread in their sockets (pipelined by a caller that reads
// no answer, so that net/http's write of the next answer waits for ever).
func TestServeDecidedPeersHoldNoSlot(t *testing.T) {
	const limit = 4
	r, addr := serveRunner(t, Options{MaxConns: limit, Open: calling(echo)}, true)
	if _, err := r.Ensure("sb-a"); err != nil {
		t.Fatal(err)
	}
	const probe = "GET /sandboxes HTTP/1.1\r\nHost: a\r\n\r\n"
	chunk := []byte(strings.Repeat(probe, 1024))
	for range limit {
		nc, br := dialRunner(t, addr)
		nc.(*net.TCPConn).SetReadBuffer(4096)
		io.WriteString(nc, probe)
		if code, got, err := readAnswer(br); err != nil || code != http.StatusUnauthorized {
			t.Fatalf("a request without a token: %d %q %v, want 401", code, got, err)
		}
		// Answered: decided. Now requests it does not read the answers of,
		// until its writes stall: the runner's write of an answer waits, and
		// the rest of the requests wait unread in the runner's socket.
		stalled := false
		for sent := 0; sent < 256<<20 && !stalled; sent += len(chunk) {
			nc.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
			_, err := nc.Write(chunk)
			stalled = errors.Is(err, os.ErrDeadlineExceeded)
			if err != nil && !stalled {
				t.Fatal(err)
			}
		}
		if !stalled {
			t.Fatal("the runner read 256 MiB of requests whose answers were not read")
		}
	}
	head, body := leanCall("echo", `{"n":1}`)
	for i := range 2 * limit {
		gw, br := dialRunner(t, addr)
		io.WriteString(gw, head+body)
		code, got, err := readAnswer(br)
		gw.Close()
		if err != nil || code != 200 || !strings.Contains(got, `echo {\"n\":1}`) {
			t.Fatalf("gateway call %d: %d %q %v", i, code, got, err)
		}
	}
}
