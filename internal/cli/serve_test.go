package cli

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/toolgate/toolgate/internal/procs"
)

// closeListener tells the test when it accepts a connection and when one
// is closed.
type closeListener struct {
	net.Listener
	accepted chan *closeConn
}

type closeConn struct {
	net.Conn
	closed chan struct{}
	once   sync.Once
}

func (l *closeListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	c := &closeConn{Conn: nc, closed: make(chan struct{})}
	l.accepted <- c
	return c, nil
}

func (c *closeConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// TestServeUntilClosesFresh: at the stop, a connection that has sent
// nothing and one whose request has not come whole are closed at once,
// while a request in flight is answered (net/http's Shutdown alone kept
// the first two until its 5 s ran out, the whole stop waiting for them).
func TestServeUntilClosesFresh(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &closeListener{Listener: ln, accepted: make(chan *closeConn, 3)}
	running, finish := make(chan struct{}), make(chan struct{})
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(running)
		<-finish
		io.WriteString(w, "served")
	})}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	returned := make(chan error, 1)
	go func() { returned <- serveUntil(ctx, hs, cl) }()
	dial := func(send string) (net.Conn, *closeConn) {
		nc, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		if _, err := io.WriteString(nc, send); err != nil {
			t.Fatal(err)
		}
		return nc, <-cl.accepted
	}
	call, _ := dial("GET /call HTTP/1.1\r\nHost: a\r\n\r\n")
	<-running
	silent, silentSide := dial("")
	_, partSide := dial("GET /part HTTP/1.1\r\nHost: a\r\n")

	cancel()
	for _, c := range []*closeConn{silentSide, partSide} {
		select {
		case <-c.closed:
		case err := <-returned:
			t.Fatalf("serveUntil returned (%v) and left a connection without a request open", err)
		}
	}
	close(finish)
	res, err := http.ReadResponse(bufio.NewReader(call), nil)
	if err != nil {
		t.Fatalf("the request in flight at the stop: %v", err)
	}
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || string(body) != "served" {
		t.Errorf("the request in flight at the stop: %d %q", res.StatusCode, body)
	}
	if err := <-returned; err != nil {
		t.Errorf("serveUntil: %v", err)
	}
	if n, err := silent.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("the silent connection read %d, %v; want EOF", n, err)
	}
}

// TestCountCallsWidensUnderConcurrentCalls: calls to /mcp that wait for
// each other widen the server; a session's GET stream does not count.
func TestCountCallsWidensUnderConcurrentCalls(t *testing.T) {
	t.Setenv("GOMAXPROCS", "") // Narrow keeps a GOMAXPROCS the environment sets
	// procs' state is the process's: an earlier test may have left it
	// narrowed, or widened by a Demand whose last burst ended within its
	// Calm (then Narrow would leave the process wide). Start from Go's
	// default, and leave it so.
	procs.ResetForTest()
	t.Cleanup(procs.ResetForTest)
	procs.Narrow() // as serveHTTP does
	widen := procs.Widen()
	def := runtime.GOMAXPROCS(0) // what a Widen gives back
	widen()
	if def < 2 {
		t.Skip("the process had one processor before Narrow: widening changes nothing")
	}
	procsNow := func() int { return runtime.GOMAXPROCS(0) }
	if got := procsNow(); got != 1 {
		t.Fatalf("after Narrow: %d processors, want 1", got)
	}
	in, release := make(chan int, 3), make(chan struct{})
	srv := httptest.NewServer(countCalls(&procs.Demand{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in <- procsNow()
		<-release
	})))
	defer srv.Close()
	released := sync.OnceFunc(func() { close(release) })
	defer released() // before srv.Close, which waits for the handlers
	call := func(method string, done *sync.WaitGroup) {
		done.Go(func() {
			req, _ := http.NewRequest(method, srv.URL, strings.NewReader("{}"))
			if resp, err := http.DefaultClient.Do(req); err != nil {
				t.Error(err)
			} else {
				resp.Body.Close()
			}
		})
	}
	var stream, calls sync.WaitGroup
	call(http.MethodGet, &stream)
	<-in
	call(http.MethodPost, &calls)
	if got := <-in; got != 1 {
		t.Fatalf("one call beside a GET stream: %d processors, want 1", got)
	}
	call(http.MethodPost, &calls)
	<-in
	if got := procsNow(); got != def {
		t.Fatalf("two calls at once: %d processors, want %d", got, def)
	}
	released()
	calls.Wait()
	stream.Wait()
	call(http.MethodPost, &calls) // alone again: narrows as it ends
	<-in
	calls.Wait()
	if got := procsNow(); got != 1 {
		t.Fatalf("a call alone after the overlap: %d processors, want 1", got)
	}
}
