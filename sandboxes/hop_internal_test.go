package sandboxes

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/runner"
	"github.com/toolgate/toolgate/tool"
)

// rawRunner is a runner written byte by byte: it makes any sandbox (PUT)
// and answers each call by writing what answer writes on the connection
// itself; answer returns false to close the connection after it. It
// counts the connections that carried a call.
func rawRunner(t *testing.T, answer func(w io.Writer, call int) bool) (string, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		conns, calls atomic.Int32
		wg           sync.WaitGroup
	)
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				br := bufio.NewReader(c)
				counted := false
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					if req.Method == http.MethodPut {
						io.WriteString(c, "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
						continue
					}
					if req.Header.Get(runner.VersionHeader) != runner.CallVersion || req.Header.Get("Authorization") == "" {
						io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
						continue
					}
					if !counted {
						counted = true
						conns.Add(1)
					}
					if !answer(c, int(calls.Add(1))) {
						return
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String(), &conns
}

const (
	okHead   = "HTTP/1.1 200 OK\r\nContent-Type: application/jsonl\r\nToolgate-Call-Version: 2\r\n"
	okResult = `{"result":{"content":[{"type":"text","text":"ok"}]}}` + "\n"
)

// chunk is data as one chunk of a chunked body.
func chunk(data string) string {
	return strconv.FormatInt(int64(len(data)), 16) + "\r\n" + data + "\r\n"
}

// TestHopAnswers: the hop reads the answers a runner may give (a sized
// body, chunks, progress in chunks of its own, an interim 100, trailers)
// and keeps the connection when the answer's end came with it; an answer
// that says it closes, that sends more than its end, or whose body ends
// with the connection is read and its connection not kept.
func TestHopAnswers(t *testing.T) {
	cases := []struct {
		name   string
		answer string
		kept   bool
	}{
		{"sized", okHead + "Content-Length: " + strconv.Itoa(len(okResult)) + "\r\n\r\n" + okResult, true},
		{"chunked", okHead + "Transfer-Encoding: chunked\r\n\r\n" + chunk(okResult) + "0\r\n\r\n", true},
		{"progress chunks", okHead + "Transfer-Encoding: chunked\r\n\r\n" + chunk(`{"progress":{"done":1}}`+"\n") + chunk(`{"res`) + chunk(okResult[5:]) + "0\r\n\r\n", true},
		{"interim", "HTTP/1.1 100 Continue\r\n\r\n" + okHead + "Content-Length: " + strconv.Itoa(len(okResult)) + "\r\n\r\n" + okResult, true},
		{"trailers", okHead + "Transfer-Encoding: chunked\r\n\r\n" + chunk(okResult) + "0\r\nX-Done: 1\r\n\r\n", false},
		{"closes", okHead + "Connection: close\r\nContent-Length: " + strconv.Itoa(len(okResult)) + "\r\n\r\n" + okResult, false},
		{"more after", okHead + "Content-Length: " + strconv.Itoa(len(okResult)) + "\r\n\r\n" + okResult + "HTTP/1.1 200 OK\r\n", false},
		{"HTTP/1.0", strings.Replace(okHead, "1.1", "1.0", 1) + "\r\n" + okResult, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			url, conns := rawRunner(t, func(w io.Writer, _ int) bool {
				io.WriteString(w, c.answer)
				return !strings.Contains(c.answer, "HTTP/1.0")
			})
			s := replica(t, nil, Options{}, url)
			tools := s.Tools([]tool.Definition{readDef})
			var progress int
			ctx := tool.WithProgress(context.Background(), func(float64, float64, string) { progress++ })
			for range 3 {
				res, err := tools[0].Run(ctx, tool.Call{Name: "read_file", Args: []byte(`{}`), Principal: "alice", Session: "c1"})
				if err != nil || res.Error != nil || res.Text() != "ok" {
					t.Fatalf("%v %v %q", err, res.Error, res.Text())
				}
			}
			if !s.conns[ID("alice", "c1")].lean() {
				t.Fatal("the calls did not go through the hop")
			}
			if want := int32(3); c.kept {
				want = 1
				if conns.Load() != want {
					t.Errorf("3 calls on %d connections, want %d", conns.Load(), want)
				}
			} else if conns.Load() != want {
				t.Errorf("3 calls on %d connections, want %d (none kept)", conns.Load(), want)
			}
			if strings.Contains(c.name, "progress") && progress != 3 {
				t.Errorf("%d progress reports, want 3", progress)
			}
		})
	}
}

// TestHopHostileAnswers: an answer that is too large, broken or not HTTP is
// a structured error, never a hang or a result, and the call, a read as a
// write, is sent once (it reached the runner: whether it ran is unknown);
// an answer of another format version is refused, saying to run the same
// release.
func TestHopHostileAnswers(t *testing.T) {
	cases := []struct {
		name, answer string
		typ          tool.ErrorType
		says         string
	}{
		{"huge head", okHead + "X-Pad: " + strings.Repeat("a", 3000) + "\r\n" + strings.Repeat("X-Pad: "+strings.Repeat("a", 3000)+"\r\n", 30) + "\r\n", tool.Unavailable, "head is longer"},
		{"not HTTP", "SSH-2.0-OpenSSH_9.6\r\n", tool.Unavailable, "status line"},
		{"bad chunk size", okHead + "Transfer-Encoding: chunked\r\n\r\nzz\r\n" + okResult, tool.Unavailable, "chunked"},
		{"chunk cut", okHead + "Transfer-Encoding: chunked\r\n\r\n" + chunk(okResult)[:20], tool.Unavailable, "broke off"},
		{"line cut", okHead + "Content-Length: 9999\r\n\r\n" + okResult[:20], tool.Unavailable, "broke off"},
		{"no result", okHead + "Content-Length: " + strconv.Itoa(len(`{"progress":{"done":1}}`+"\n")) + "\r\n\r\n" + `{"progress":{"done":1}}` + "\n", tool.Unavailable, "broke off"},
		{"gzip", okHead + "Transfer-Encoding: gzip\r\n\r\n", tool.Unavailable, "Transfer-Encoding"},
		{"two lengths", okHead + "Content-Length: 1\r\nContent-Length: 2\r\n\r\n", tool.Unavailable, "Content-Length"},
		{"length and chunks", okHead + "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk(okResult) + "0\r\n\r\n", tool.Unavailable, "both a Content-Length and a Transfer-Encoding"},
		{"space before colon", okHead + "Transfer-Encoding : chunked\r\nContent-Length: " + strconv.Itoa(len(okResult)) + "\r\n\r\n" + okResult, tool.Unavailable, "header that does not parse"},
		{"folded", okHead + " Transfer-Encoding: chunked\r\nContent-Length: " + strconv.Itoa(len(okResult)) + "\r\n\r\n" + okResult, tool.Unavailable, "header that does not parse"},
		{"signed length", okHead + "Content-Length: +" + strconv.Itoa(len(okResult)) + "\r\n\r\n" + okResult, tool.Unavailable, "Content-Length"},
		{"spaced chunk size", okHead + "Transfer-Encoding: chunked\r\n\r\n " + chunk(okResult) + "0\r\n\r\n", tool.Unavailable, "chunked"},
		{"bare LF chunk size", okHead + "Transfer-Encoding: chunked\r\n\r\n" + strings.Replace(chunk(okResult), "\r\n", "\n", 1) + "0\r\n\r\n", tool.Unavailable, "chunked"},
		{"signed chunk size", okHead + "Transfer-Encoding: chunked\r\n\r\n+" + chunk(okResult) + "0\r\n\r\n", tool.Unavailable, "chunked"},
		{"closed", "", tool.Unavailable, "without answering"},
		{"failed", "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n", tool.Unavailable, "500"},
		{"old version", "HTTP/1.1 200 OK\r\nContent-Type: application/jsonl\r\nContent-Length: " + strconv.Itoa(len(okResult)) + "\r\n\r\n" + okResult, tool.Internal, "same release"},
		{"not JSON lines", "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nToolgate-Call-Version: 2\r\nContent-Length: " + strconv.Itoa(len(okResult)) + "\r\n\r\n" + okResult, tool.Internal, "same release"},
	}
	for _, c := range cases {
		for _, def := range []tool.Definition{readDef, writeDef} {
			t.Run(c.name+"/"+def.Name, func(t *testing.T) {
				url, conns := rawRunner(t, func(w io.Writer, _ int) bool {
					io.WriteString(w, c.answer)
					return false
				})
				s := replica(t, nil, Options{}, url)
				res, err := s.Tools([]tool.Definition{def})[0].Run(context.Background(), tool.Call{Name: def.Name, Args: []byte(`{}`), Principal: "alice", Session: "c1"})
				if err != nil || res.Error == nil || res.Error.Type != c.typ || !strings.Contains(res.Error.Message+res.Error.Suggestion, c.says) {
					t.Fatalf("%v %v, want %s saying %q", err, res.Error, c.typ, c.says)
				}
				if c.typ == tool.Unavailable && !strings.Contains(res.Error.Message, "whether it ran is unknown") {
					t.Errorf("%v, want that whether it ran is unknown", res.Error)
				}
				if conns.Load() != 1 {
					t.Errorf("sent %d times, want once", conns.Load())
				}
			})
		}
	}
}

var writeDef = tool.Definition{Name: "write_file", Level: tool.LevelWrite}

// TestHopTurnedAway: a read the runner turned away before running it (no
// such sandbox, a token it does not take) is sent once more; a write is
// not, and says it did not run.
func TestHopTurnedAway(t *testing.T) {
	for _, c := range []struct {
		def   tool.Definition
		sends int32
		says  string
	}{{readDef, 2, ""}, {writeDef, 1, "so it did not run"}} {
		t.Run(c.def.Name, func(t *testing.T) {
			url, conns := rawRunner(t, func(w io.Writer, n int) bool {
				if n == 1 {
					io.WriteString(w, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
					return true
				}
				io.WriteString(w, okHead+"Content-Length: "+strconv.Itoa(len(okResult))+"\r\n\r\n"+okResult)
				return true
			})
			s := replica(t, nil, Options{}, url)
			res, err := s.Tools([]tool.Definition{c.def})[0].Run(context.Background(), tool.Call{Name: c.def.Name, Args: []byte(`{}`), Principal: "alice", Session: "c1"})
			if err != nil {
				t.Fatal(err)
			}
			if c.says == "" && (res.Error != nil || !strings.HasSuffix(res.Text(), "ok")) || c.says != "" && (res.Error == nil || !strings.Contains(res.Error.Message, c.says)) {
				t.Errorf("%v %q, want %q", res.Error, res.Text(), c.says)
			}
			if conns.Load() != c.sends {
				t.Errorf("sent on %d connections, want %d", conns.Load(), c.sends)
			}
		})
	}
}

// TestHopTooLarge: a call larger than a runner takes is refused before
// anything of it is sent, through the hop and through net/http, with the
// error the runner's 413 gives (it did not run): the hop, writing the
// whole request before it reads, would see the runner's close instead.
func TestHopTooLarge(t *testing.T) {
	url, conns := rawRunner(t, func(w io.Writer, _ int) bool {
		io.WriteString(w, okHead+"Content-Length: "+strconv.Itoa(len(okResult))+"\r\n\r\n"+okResult)
		return true
	})
	t.Cleanup(http.DefaultTransport.(*http.Transport).CloseIdleConnections) // connCounter's, before the runner's end
	big := []byte(`{"path":"x","content":"` + strings.Repeat("a", runner.MaxCallBytes) + `"}`)
	for _, client := range []*http.Client{{Transport: &http.Transport{}}, {Transport: &connCounter{}}} {
		s := replica(t, nil, Options{HTTPClient: client}, url)
		for _, def := range []tool.Definition{readDef, writeDef} {
			res, err := s.Tools([]tool.Definition{def})[0].Run(context.Background(), tool.Call{Name: def.Name, Args: big, Principal: "alice", Session: "c1"})
			if err != nil || res.Error == nil || res.Error.Type != tool.TooLarge {
				t.Errorf("%s: %v %v, want too_large", def.Name, err, res.Error)
			}
		}
	}
	if conns.Load() != 0 {
		t.Errorf("%d calls sent, want none", conns.Load())
	}
}

// TestHopCancel: a call whose runner does not answer ends when its context
// does, and its connection is closed (the runner sees its request end).
func TestHopCancel(t *testing.T) {
	closed := make(chan struct{})
	url, _ := rawRunner(t, func(w io.Writer, _ int) bool {
		io.WriteString(w, okHead+"Transfer-Encoding: chunked\r\n\r\n"+chunk(`{"progress":{"done":1}}`+"\n"))
		c := w.(net.Conn)
		c.SetReadDeadline(time.Now().Add(time.Minute))
		c.Read(make([]byte, 1)) // the gateway's close ends it
		close(closed)
		return false
	})
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	ctx = tool.WithProgress(ctx, func(float64, float64, string) { close(started) })
	go func() { <-started; cancel() }()
	res := forward(t, ctx, url)
	if res.Error == nil || res.Error.Type != tool.AsError(context.Canceled).Type {
		t.Fatalf("%v, want the cancellation", res.Error)
	}
	<-closed
}

// TestHopRunnerRestarted: a kept connection the runner closed (it
// restarted, or closed it idle) is not used: the next call, even a write,
// goes on a new one.
func TestHopRunnerRestarted(t *testing.T) {
	var mu sync.Mutex
	var last io.Writer
	url, conns := rawRunner(t, func(w io.Writer, _ int) bool {
		mu.Lock()
		last = w
		mu.Unlock()
		io.WriteString(w, okHead+"Content-Length: "+strconv.Itoa(len(okResult))+"\r\n\r\n"+okResult)
		return true
	})
	s := replica(t, nil, Options{}, url)
	write := s.Tools([]tool.Definition{{Name: "write_file", Level: tool.LevelWrite}})[0]
	for i := range 2 {
		res, err := write.Run(context.Background(), tool.Call{Name: "write_file", Args: []byte(`{}`), Principal: "alice", Session: "c1"})
		if err != nil || res.Error != nil {
			t.Fatalf("call %d: %v %v", i, err, res.Error)
		}
		mu.Lock()
		last.(net.Conn).Close() // the runner closes the kept connection
		mu.Unlock()
		waitClosed(s.hop)
	}
	if conns.Load() != 2 {
		t.Errorf("2 calls on %d connections, want 2", conns.Load())
	}
}

// TestHopFits: the hop takes plain http:// runners reached directly; a
// runner over TLS or through a proxy, or a client whose Transport is not
// an *http.Transport or that has a Timeout or a Jar, goes through net/http.
func TestHopFits(t *testing.T) {
	plain, _ := url.Parse("http://127.0.0.1:8790/sandboxes/sb-a/call") // loopback: never proxied by the environment
	viaTLS, _ := url.Parse("https://runner.example:8790/sandboxes/sb-a/call")
	viaProxy := &http.Transport{Proxy: func(*http.Request) (*url.URL, error) { return url.Parse("http://proxy:3128") }}
	jar, _ := cookiejar.New(nil)
	for _, c := range []struct {
		name   string
		client *http.Client
		u      *url.URL
		fits   bool
	}{
		{"default", &http.Client{}, plain, true},
		{"a dialer", &http.Client{Transport: &http.Transport{}}, plain, true},
		{"TLS", &http.Client{}, viaTLS, false},
		{"a proxy", &http.Client{Transport: viaProxy}, plain, false},
		{"a RoundTripper", &http.Client{Transport: &connCounter{}}, plain, false},
		{"a Timeout", &http.Client{Timeout: time.Second}, plain, false},
		{"a Jar", &http.Client{Jar: jar}, plain, false},
		{"the default Transport's settings", &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}, plain, true},
		{"TLS settings", &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{}, TLSHandshakeTimeout: time.Second}}, plain, true},
		{"DisableKeepAlives", &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}, plain, false},
		{"ResponseHeaderTimeout", &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: time.Second}}, plain, false},
		{"IdleConnTimeout", &http.Client{Transport: &http.Transport{IdleConnTimeout: time.Second}}, plain, false},
		{"MaxIdleConnsPerHost", &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}, plain, false},
		{"MaxConnsPerHost", &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}, plain, false},
		{"MaxResponseHeaderBytes", &http.Client{Transport: &http.Transport{MaxResponseHeaderBytes: 1 << 10}}, plain, false},
		{"Dial", &http.Client{Transport: &http.Transport{Dial: net.Dial}}, plain, false},
		{"DialTLS", &http.Client{Transport: &http.Transport{DialTLS: net.Dial}}, plain, false},
		{"Protocols", &http.Client{Transport: &http.Transport{Protocols: new(http.Protocols)}}, plain, false},
	} {
		if got := newHop(c.client).fits(c.u); got != c.fits {
			t.Errorf("%s: fits %v, want %v", c.name, got, c.fits)
		}
	}
}

// TestHopPortless: a runner URL naming no port (or an empty one) is
// reached on port 80, an IPv6 one in brackets, through the hop as through
// net/http.
func TestHopPortless(t *testing.T) {
	url, conns := rawRunner(t, func(w io.Writer, _ int) bool {
		io.WriteString(w, okHead+"Content-Length: "+strconv.Itoa(len(okResult))+"\r\n\r\n"+okResult)
		return true
	})
	for _, c := range []struct{ url, addr string }{
		{"http://runner.test", "runner.test:80"},
		{"http://runner.test:", "runner.test:80"},
		{"http://[::1]", "[::1]:80"},
		{"http://[::1]:", "[::1]:80"},
	} {
		var mu sync.Mutex
		dialled := map[string]bool{}
		tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			mu.Lock()
			dialled[addr] = true
			mu.Unlock()
			var d net.Dialer
			return d.DialContext(ctx, network, strings.TrimPrefix(url, "http://"))
		}}
		client := &http.Client{Transport: tr}
		b, err := NewRunners([]string{c.url}, testSecret, client)
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(Options{Backend: b, Secret: testSecret, HTTPClient: client})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		res, err := s.Tools([]tool.Definition{readDef})[0].Run(context.Background(), tool.Call{Name: "read_file", Args: []byte(`{}`), Principal: "alice", Session: "c1"})
		if err != nil || res.Error != nil || !s.conns[ID("alice", "c1")].lean() {
			t.Errorf("%s: %v %v, or not through the hop", c.url, err, res.Error)
		}
		mu.Lock()
		if len(dialled) != 1 || !dialled[c.addr] {
			t.Errorf("%s: dialled %v, want %s", c.url, dialled, c.addr)
		}
		mu.Unlock()
	}
	if conns.Load() != 4 {
		t.Errorf("%d calls arrived, want 4", conns.Load())
	}
}

// hopCall makes one call through h to the runner at addr and reads its
// answer to its end, the connection kept as Run keeps it.
func hopCall(t *testing.T, h *hop, addr string) {
	t.Helper()
	rp, err := h.do(context.Background(), addr, &hopRequest{host: addr, path: "/sandboxes/sb-x/call", body: []byte(`{}`),
		header: [][2]string{{"Authorization", "Bearer x"}, {runner.VersionHeader, runner.CallVersion}}}, func() {})
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, rp.body)
	rp.done(rp.ended())
}

// closedConn says whether the gateway closed c's connection.
func closedConn(c *hopConn) bool {
	return errors.Is(c.nc.SetReadDeadline(time.Time{}), net.ErrClosed)
}

// TestHopIdleBounded: kept connections are bounded in all, whatever the
// number of addresses (the kubernetes backend: one a sandbox), the least
// recently used closed first, and one idle past idleFor is closed by the
// next get or put, to any address: a runner never called again holds
// none.
func TestHopIdleBounded(t *testing.T) {
	url, conns := rawRunner(t, func(w io.Writer, _ int) bool {
		io.WriteString(w, okHead+"Content-Length: "+strconv.Itoa(len(okResult))+"\r\n\r\n"+okResult)
		return true
	})
	h := newHop(&http.Client{})
	t.Cleanup(h.close)
	h.dial = func(ctx context.Context, network, _ string) (net.Conn, error) { // every pod's address: the runner
		var d net.Dialer
		return d.DialContext(ctx, network, strings.TrimPrefix(url, "http://"))
	}
	var kept []*hopConn
	for i := range maxIdle + 10 {
		hopCall(t, h, fmt.Sprintf("10.0.%d.%d:8790", i/256, i%256))
		kept = append(kept, h.idle[len(h.idle)-1])
	}
	if len(h.idle) != maxIdle || int(conns.Load()) != maxIdle+10 {
		t.Fatalf("%d kept of %d, want %d", len(h.idle), conns.Load(), maxIdle)
	}
	for i, c := range kept {
		if closedConn(c) != (i < 10) {
			t.Errorf("connection %d closed: %v, want %v", i, closedConn(c), i < 10)
		}
	}

	h.idleFor = time.Nanosecond // every kept connection has been idle long enough
	hopCall(t, h, "10.1.0.1:8790")
	for _, c := range kept {
		if !closedConn(c) {
			t.Fatalf("a connection to %s idle past idleFor is open", c.addr)
		}
	}
	if len(h.idle) > 1 {
		t.Errorf("%d connections kept, want at most the last", len(h.idle))
	}
}

// waitClosed waits until the connection h keeps has seen its runner's
// close (no timing: until a peek says so).
func waitClosed(h *hop) {
	h.mu.Lock()
	c := h.idle[len(h.idle)-1]
	h.mu.Unlock()
	for open(c.rc) {
		runtime.Gosched()
	}
}

// wrapped is a connection a DialContext wraps (metrics, tracing), saying
// what it wraps when unwrap is set.
type wrapped struct {
	net.Conn
	unwrap bool
}

type unwrapping struct{ wrapped }

func (w unwrapping) NetConn() net.Conn { return w.Conn }

// TestHopWrappedConn: a connection dialled through a wrapper is asked
// whether it is open through the socket the wrapper names (NetConn): the
// runner having closed it, a write goes on a new one and runs; a
// connection whose socket cannot be found is not kept (a write on it
// after the runner closed it would fail, whether it ran unknown).
func TestHopWrappedConn(t *testing.T) {
	for _, unwrap := range []bool{true, false} {
		t.Run(fmt.Sprint("NetConn ", unwrap), func(t *testing.T) {
			var mu sync.Mutex
			var last net.Conn
			url, conns := rawRunner(t, func(w io.Writer, _ int) bool {
				mu.Lock()
				last = w.(net.Conn)
				mu.Unlock()
				io.WriteString(w, okHead+"Content-Length: "+strconv.Itoa(len(okResult))+"\r\n\r\n"+okResult)
				return true
			})
			t.Cleanup(http.DefaultTransport.(*http.Transport).CloseIdleConnections) // the backend's, before the runner's end
			tr := &http.Transport{DialContext: func(ctx context.Context, n, a string) (net.Conn, error) {
				var d net.Dialer
				c, err := d.DialContext(ctx, n, a)
				if err != nil || !unwrap {
					return wrapped{Conn: c}, err
				}
				return unwrapping{wrapped{Conn: c}}, nil
			}}
			s := replica(t, nil, Options{HTTPClient: &http.Client{Transport: tr}}, url)
			write := s.Tools([]tool.Definition{writeDef})[0]
			for i := range 2 {
				res, err := write.Run(context.Background(), tool.Call{Name: "write_file", Args: []byte(`{}`), Principal: "alice", Session: "c1"})
				if err != nil || res.Error != nil {
					t.Fatalf("call %d: %v %v", i, err, res.Error)
				}
				s.hop.mu.Lock()
				kept := len(s.hop.idle)
				s.hop.mu.Unlock()
				if kept != map[bool]int{true: 1, false: 0}[unwrap] {
					t.Fatalf("%d connections kept", kept)
				}
				if unwrap {
					mu.Lock()
					last.Close() // the runner closes the kept connection
					mu.Unlock()
					waitClosed(s.hop)
				}
			}
			if conns.Load() != 2 {
				t.Errorf("2 calls on %d connections, want 2", conns.Load())
			}
		})
	}
}
