package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/tool"
)

// TestServeLean: Serve answers well-formed calls itself (its answers carry
// no Date, net/http's do), one after another and pipelined on one
// connection, and hands every other request, with its connection, to
// net/http, which answers it as Handler does: a wrong token 401 first, a
// head net/http refuses 400, a chunked body, Expect, HTTP/1.0 and a head
// in two reads served. When it stops, an idle connection is closed and a
// call in progress is answered.
func TestServeLean(t *testing.T) {
	secret := []byte("runner-test-secret-0123")
	started, release := make(chan struct{}), make(chan struct{})
	r, err := New(Options{Dir: t.TempDir(), Secret: secret, Open: func(id, ws string) (Sandbox, error) {
		return Sandbox{MCP: http.NotFoundHandler(), Close: func() error { return nil },
			Call: func(ctx context.Context, name string, args json.RawMessage) tool.Result {
				if name == "wait" {
					close(started)
					<-release
				}
				return tool.TextResult(name + " " + string(args))
			}}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Ensure("sb-a"); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	served := make(chan error, 1)
	go func() { served <- r.Serve(ctx, ln) }()
	addr := ln.Addr().String()

	auth := "Authorization: Bearer " + Token(secret, "sb-a") + "\r\n"
	version := VersionHeader + ": " + CallVersion + "\r\n"
	call := func(name string, extra ...string) string {
		body := `{"name":"` + name + `","arguments":{"n":1}}`
		return "POST /sandboxes/sb-a/call HTTP/1.1\r\nHost: runner\r\n" + auth + version + strings.Join(extra, "") +
			"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	}
	dial := func() (net.Conn, *bufio.Reader) {
		t.Helper()
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		return nc, bufio.NewReader(nc)
	}
	// answer reads one answer: its status, whether it is the lean path's,
	// and its body.
	answer := func(br *bufio.Reader) (int, bool, string) {
		t.Helper()
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == 401 && resp.Header.Get("WWW-Authenticate") == "" {
			t.Error("a 401 without WWW-Authenticate")
		}
		return resp.StatusCode, resp.Header.Get("Date") == "", string(b)
	}
	result := func(body string) string {
		var a Answer
		if json.Unmarshal([]byte(body), &a) != nil || a.Result == nil {
			return "no result in " + body
		}
		return a.Result.Tool().Text()
	}

	// Calls one after another, then two in one write: all lean, on one
	// connection.
	nc, br := dial()
	for _, names := range [][]string{{"a"}, {"b"}, {"c", "d"}} {
		w := ""
		for _, n := range names {
			w += call(n)
		}
		io.WriteString(nc, w)
		for _, n := range names {
			if code, lean, body := answer(br); code != 200 || !lean || result(body) != n+` {"n":1}` {
				t.Errorf("call %s: %d lean %v %s", n, code, lean, body)
			}
		}
	}

	body := `{"name":"x","arguments":{"n":1}}`
	length := "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
	for _, c := range []struct {
		name, req string
		want      int
	}{
		{"another sandbox's token", strings.Replace(call("x"), Token(secret, "sb-a"), Token(secret, "sb-b"), 1), 401},
		{"two tokens, the first wrong", strings.Replace(call("x"), auth, "Authorization: Bearer 00\r\n"+auth, 1), 401},
		{"an old version", strings.Replace(call("x"), version, VersionHeader+": 1\r\n", 1), 400},
		{"no Host", strings.Replace(call("x"), "Host: runner\r\n", "", 1), 400},
		{"a space before a colon", strings.Replace(call("x"), "Host: runner", "Host : runner", 1), 400},
		{"two lengths", strings.Replace(call("x"), "Content-Length: ", "Content-Length: 3\r\nContent-Length: ", 1), 400},
		{"a signed length", strings.Replace(call("x"), "Content-Length: ", "Content-Length: +", 1), 400},
		{"an unknown sandbox", strings.Replace(strings.Replace(call("x"), "sb-a", "sb-z", 1), Token(secret, "sb-a"), Token(secret, "sb-z"), 1), 404},
		{"a chunked body", strings.Replace(call("x"), length, "Transfer-Encoding: chunked\r\n\r\n"+strconv.FormatInt(int64(len(body)), 16)+"\r\n", 1) + "\r\n0\r\n\r\n", 200},
		{"Expect", call("x", "Expect: 100-continue\r\n"), 200},
		{"HTTP/1.0", strings.Replace(call("x"), "HTTP/1.1", "HTTP/1.0", 1), 200},
		{"a query", strings.Replace(call("x"), "/call ", "/call?x=1 ", 1), 200},
	} {
		nc, br := dial()
		io.WriteString(nc, c.req)
		code, lean, body := answer(br)
		if code == 100 {
			code, lean, body = answer(br)
		}
		// net/http's answers to heads it refuses carry no Date either: they
		// are told by their plain text (the lean path's is JSON).
		if code != c.want || code == 200 && lean || code == 400 && strings.Contains(body, "invalid_request") {
			t.Errorf("%s: %d (lean %v) %s, want %d from net/http", c.name, code, lean, body, c.want)
		}
		if code == 200 && result(body) != `x {"n":1}` {
			t.Errorf("%s: %s", c.name, body)
		}
	}
	// A head that comes in two parts is served, by either path.
	nc2, br2 := dial()
	w := call("y")
	io.WriteString(nc2, w[:20])
	io.WriteString(nc2, w[20:])
	if code, _, body := answer(br2); code != 200 || result(body) != `y {"n":1}` {
		t.Errorf("a head in two writes: %d %s", code, body)
	}

	// Stopping: the call in progress is answered, the idle connection
	// closed, and Serve returns.
	busy, bbr := dial()
	io.WriteString(busy, call("wait"))
	<-started
	stop()
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("an idle connection after the stop: %v, want EOF", err)
	}
	close(release)
	if code, lean, body := answer(bbr); code != 200 || !lean || result(body) != `wait {"n":1}` {
		t.Errorf("the call in progress at the stop: %d lean %v %s", code, lean, body)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
}
