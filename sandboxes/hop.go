package sandboxes

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/toolgate/toolgate/runner"
)

// hop is the gateway's HTTP/1.1 client for the call endpoint of sandboxes
// on plain http:// runners: the request is written and its answer read on
// the calling goroutine, over connections kept between calls, with none
// of net/http's Transport hand-offs (a writer and a reader goroutine per
// connection, each a wake-up per call): a read that finds nothing parks
// the goroutine on the runtime's poller, as net/http's would. (Waiting for
// the answer in poll(2) on the calling thread first, as it once did, held
// the thread's processor through the call: the runtime's monitor thread
// ticked every 20 µs for it, and a remote read_file took 0.68 ms with the
// wait, 0.59 without, at the median of 9 alternating bench/remote runs.)
// Cancelling a call closes its connection. Everything read from a runner
// is bounded (a status line and headers of at most maxHeadBytes, chunk
// sizes, the answer's lines), and whatever does not parse is an error; a
// connection whose answer was not read to its end is closed, never kept.
// A kept connection found closed (open) is not used; one the runner closes
// while a call is being written on it fails that call (a write then may
// have run: it is not sent again). A connection whose socket cannot be
// asked (a DialContext's wrapper without NetConn) is not kept.
//
// It dials with the DialContext of the Options.HTTPClient's
// *http.Transport; a runner that client would reach through a proxy, over
// TLS, or a client whose Transport is another RoundTripper, sets what the
// hop does not honour, or that has a Timeout or a Jar, is called through
// net/http instead (newHop, plain, fits).
type hop struct {
	dial  func(ctx context.Context, network, addr string) (net.Conn, error)
	proxy func(*http.Request) (*url.URL, error)

	mu      sync.Mutex
	idle    []*hopConn // kept connections, the least recently used first
	idleFor time.Duration
	closed  bool
}

// Kept connections: at most maxIdlePerHost per runner (host:port), maxIdle
// in all (with the kubernetes backend each sandbox is an address of its
// own), none idle longer than maxIdleFor (as net/http's default
// Transport): each get and put closes those past either bound. An
// answer's status line and headers take at most maxHeadBytes.
const (
	maxIdlePerHost = 16
	maxIdle        = 256
	maxIdleFor     = 90 * time.Second
	maxHeadBytes   = 64 << 10
)

// newHop is the hop dialling as client does, or nil when client's Transport
// is not an *http.Transport (a test's RoundTripper), sets what the hop
// does not honour (plain), or the client has a Timeout or a Jar.
func newHop(client *http.Client) *hop {
	rt := client.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	t, ok := rt.(*http.Transport)
	if !ok || !plain(t) || client.Timeout != 0 || client.Jar != nil {
		return nil
	}
	h := &hop{dial: t.DialContext, proxy: t.Proxy, idleFor: maxIdleFor}
	if h.dial == nil {
		d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
		h.dial = d.DialContext
	}
	return h
}

// honoured are the fields of an *http.Transport the hop honours (Proxy:
// fits; DialContext), or that do not bear on a call it makes: TLS and
// proxies (fits leaves those calls to net/http), HTTP/2 (over TLS only,
// unless Protocols, not honoured, says otherwise), compression (it asks
// for none), Expect (it sends none).
var honoured = map[string]bool{
	"Proxy": true, "DialContext": true, "OnProxyConnectResponse": true, "ProxyConnectHeader": true, "GetProxyConnectHeader": true,
	"TLSClientConfig": true, "TLSHandshakeTimeout": true, "TLSNextProto": true, "ForceAttemptHTTP2": true, "HTTP2": true,
	"DisableCompression": true, "ExpectContinueTimeout": true,
}

// plain says whether t sets nothing the hop would ignore: each of its
// fields but those honoured is unset or as http.DefaultTransport has it
// (DisableKeepAlives, ResponseHeaderTimeout, IdleConnTimeout,
// MaxConnsPerHost, Dial, DialTLS, Protocols... are not honoured: a
// client setting any goes through net/http).
func plain(t *http.Transport) bool {
	v, d := reflect.ValueOf(t).Elem(), reflect.ValueOf(http.DefaultTransport.(*http.Transport)).Elem()
	for i := range v.NumField() {
		f, x := v.Type().Field(i), v.Field(i)
		if !f.IsExported() || honoured[f.Name] || x.IsZero() {
			continue
		}
		if x.Kind() == reflect.Func || !reflect.DeepEqual(x.Interface(), d.Field(i).Interface()) {
			return false
		}
	}
	return true
}

// fits says whether a call to u goes through the hop: a plain http URL
// reached directly, not through a proxy.
func (h *hop) fits(u *url.URL) bool {
	if h == nil || u.Scheme != "http" || u.User != nil || u.Host == "" {
		return false
	}
	if h.proxy != nil {
		p, err := h.proxy(&http.Request{Method: http.MethodPost, URL: u, Header: http.Header{}})
		if err != nil || p != nil {
			return false
		}
	}
	return true
}

// close closes the kept connections; later ones are not kept.
func (h *hop) close() {
	if h == nil {
		return
	}
	h.mu.Lock()
	idle := h.idle
	h.idle, h.closed = nil, true
	h.mu.Unlock()
	closeAll(idle)
}

// expire takes out of h.idle, h.mu held, the connections idle for idleFor
// or longer and, past maxIdle, the least recently used: the caller closes
// what it returns (none most of the time).
func (h *hop) expire(now time.Time) []*hopConn {
	n := 0
	for n < len(h.idle) && (len(h.idle)-n > maxIdle || now.Sub(h.idle[n].used) >= h.idleFor) {
		n++
	}
	if n == 0 {
		return nil
	}
	old := append([]*hopConn(nil), h.idle[:n]...)
	h.idle = slices.Delete(h.idle, 0, n)
	return old
}

func closeAll(cs []*hopConn) {
	for _, c := range cs {
		c.nc.Close()
	}
}

// hopConn is one connection to a runner, its buffers reused from call to
// call.
type hopConn struct {
	addr string
	nc   net.Conn
	rc   syscall.RawConn // nc's socket, to ask whether it is open; nil: not kept
	br   *bufio.Reader
	req  []byte
	used time.Time
}

// get returns a kept connection to addr that is still open, or a new one.
func (h *hop) get(ctx context.Context, addr string) (*hopConn, error) {
	for {
		h.mu.Lock()
		old := h.expire(time.Now())
		var c *hopConn
		for i := len(h.idle) - 1; i >= 0; i-- {
			if h.idle[i].addr == addr {
				c = h.idle[i]
				h.idle = slices.Delete(h.idle, i, i+1)
				break
			}
		}
		h.mu.Unlock()
		closeAll(old)
		if c == nil {
			break
		}
		if open(c.rc) {
			return c, nil
		}
		c.nc.Close()
	}
	nc, err := h.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return &hopConn{addr: addr, nc: nc, rc: socket(nc), br: bufio.NewReaderSize(nc, 4<<10)}, nil
}

// socket is nc's socket, found through the wrappers that say what they
// wrap (NetConn), or nil.
func socket(nc net.Conn) syscall.RawConn {
	for {
		if sc, ok := nc.(syscall.Conn); ok {
			rc, err := sc.SyscallConn()
			if err != nil {
				return nil
			}
			return rc
		}
		w, ok := nc.(interface{ NetConn() net.Conn })
		if !ok {
			return nil
		}
		nc = w.NetConn()
	}
}

// put keeps c for a later call to its runner, if it can be asked whether
// it is still open then.
func (h *hop) put(c *hopConn) {
	now := time.Now()
	c.used = now
	if cap(c.req) > 64<<10 {
		c.req = nil
	}
	h.mu.Lock()
	same := 0
	for _, k := range h.idle {
		if k.addr == c.addr {
			same++
		}
	}
	if !h.closed && same < maxIdlePerHost && c.rc != nil {
		h.idle = append(h.idle, c)
		c = nil
	}
	old := h.expire(now)
	h.mu.Unlock()
	closeAll(old)
	if c != nil {
		c.nc.Close()
	}
}

// hopRequest is one call's request: POST to path on host, body JSON.
type hopRequest struct {
	host, path string
	header     [][2]string
	body       []byte
}

// reply is a runner's answer to a call: its status, the headers the
// gateway reads, and its body, read through lines. done ends it: the
// connection is kept when the body was read to its end.
type reply struct {
	code        int
	status      string
	contentType string
	version     string
	body        io.Reader
	ended       func() bool     // whether the body's end is read (reading it if buffered)
	done        func(kept bool) // ends the answer; kept: read to its end, the connection may carry another
}

// do sends r over a kept (or new) connection to addr and reads the head of
// the answer. wrote is called once anything of the request may have
// reached the runner. ctx's end closes the connection (the call's end, for
// the runner).
func (h *hop) do(ctx context.Context, addr string, r *hopRequest, wrote func()) (*reply, error) {
	c, err := h.get(ctx, addr)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { c.nc.Close() })
	fail := func(err error) (*reply, error) {
		stop()
		c.nc.Close()
		return nil, err
	}
	b := append(c.req[:0], "POST "...)
	b = append(b, r.path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, r.host...)
	for _, kv := range r.header {
		if !httpguts.ValidHeaderFieldValue(kv[1]) { // no control byte but tab (net/http's own check)
			return fail(fmt.Errorf("its header %s would hold a byte HTTP does not allow", kv[0]))
		}
		b = append(b, "\r\n"...)
		b = append(b, kv[0]...)
		b = append(b, ": "...)
		b = append(b, kv[1]...)
	}
	b = append(b, "\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(r.body)), 10)
	b = append(b, "\r\n\r\n"...)
	b = append(b, r.body...)
	c.req = b
	n, err := c.nc.Write(b)
	if n > 0 {
		wrote() // a byte of it may be read by the runner: it may run
	}
	if err != nil {
		return fail(err)
	}
	rp, keep, err := c.head()
	if err != nil {
		return fail(err)
	}
	rp.done = func(atEnd bool) {
		// Nothing may follow the answer: a runner that sends more is not
		// trusted with the next call.
		if !stop() || !atEnd || !keep || c.br.Buffered() > 0 {
			c.nc.Close()
			return
		}
		h.put(c)
	}
	return rp, nil
}

// head reads the status line and headers of an answer (1xx ones skipped)
// and sets up its body; keep is false when the connection cannot carry
// another request after it (HTTP/1.0, Connection: close, a body that ends
// only with the connection).
func (c *hopConn) head() (*reply, bool, error) {
	read := 0
	line := func() ([]byte, error) {
		l, err := c.br.ReadSlice('\n')
		read += len(l)
		switch {
		case errors.Is(err, bufio.ErrBufferFull) || read > maxHeadBytes:
			return nil, errors.New("its answer's head is longer than a runner's may be")
		case err != nil:
			if err == io.EOF && read == len(l) && len(l) == 0 {
				return nil, errors.New("it closed the connection without answering")
			}
			return nil, fmt.Errorf("its answer's head broke off: %w", err)
		}
		return bytes.TrimRight(l, "\r\n"), nil
	}
	for {
		l, err := line()
		if err != nil {
			return nil, false, err
		}
		proto, rest, _ := bytes.Cut(l, []byte(" "))
		code, err := strconv.Atoi(string(rest[:min(3, len(rest))]))
		if !bytes.HasPrefix(proto, []byte("HTTP/1.")) || len(proto) != 8 || err != nil || code < 100 || code > 999 || len(rest) > 3 && rest[3] != ' ' {
			return nil, false, fmt.Errorf("its answer does not start with an HTTP/1 status line (%.40q)", l)
		}
		rp := &reply{code: code, status: string(rest)}
		keep := proto[7] == '1'
		length, chunked := int64(-1), false
		for n := 0; ; n++ {
			l, err := line()
			if err != nil {
				return nil, false, err
			}
			if len(l) == 0 {
				break
			}
			name, value, ok := bytes.Cut(l, []byte(":"))
			if !ok || n > 256 || !httpguts.ValidHeaderFieldName(string(name)) { // a token: no space before the colon
				return nil, false, fmt.Errorf("its answer has a header that does not parse (%.40q)", l)
			}
			value = bytes.TrimSpace(value)
			switch {
			case asciiEqualFold(name, "Content-Length"):
				// ParseUint takes decimal digits only: no sign, no space.
				v, err := strconv.ParseUint(string(value), 10, 63)
				if err != nil || length >= 0 && int64(v) != length {
					return nil, false, fmt.Errorf("its answer's Content-Length %q does not parse", value)
				}
				length = int64(v)
			case asciiEqualFold(name, "Transfer-Encoding"):
				if !asciiEqualFold(value, "chunked") || chunked {
					return nil, false, fmt.Errorf("its answer's Transfer-Encoding %q is not chunked", value)
				}
				chunked = true
			case asciiEqualFold(name, "Connection"):
				if asciiEqualFold(value, "close") {
					keep = false
				}
			case asciiEqualFold(name, "Content-Type"):
				rp.contentType = string(value)
			case asciiEqualFold(name, runner.VersionHeader):
				rp.version = string(value)
			}
		}
		if code >= 100 && code < 200 && code != 101 {
			continue // an interim answer: the real one follows
		}
		if code == 101 || code == 204 || code == 304 {
			return nil, false, fmt.Errorf("it answered %d to a call", code)
		}
		if chunked && length >= 0 {
			// RFC 9112 6.3: a sign of request smuggling or a broken runner.
			return nil, false, errors.New("its answer has both a Content-Length and a Transfer-Encoding")
		}
		switch {
		case chunked:
			b := &chunks{br: c.br}
			rp.body, rp.ended = b, b.ended
		case length >= 0:
			b := &sized{br: c.br, left: length}
			rp.body, rp.ended = b, func() bool { return b.left == 0 }
		default:
			rp.body, rp.ended, keep = c.br, func() bool { return false }, false
		}
		return rp, keep, nil
	}
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// sized is a body of a known length.
type sized struct {
	br   *bufio.Reader
	left int64
}

func (b *sized) Read(p []byte) (int, error) {
	if b.left == 0 {
		return 0, io.EOF
	}
	n, err := b.br.Read(p[:min(int64(len(p)), b.left)])
	b.left -= int64(n)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// chunks is a chunked body (RFC 9112 7.1): sizes in hex, each chunk's data
// followed by CRLF, a zero size and the trailer section ending it.
type chunks struct {
	br   *bufio.Reader
	left int64 // data left in the current chunk
	crlf bool  // the current chunk's data is read: its CRLF comes next
	eof  bool
}

func (b *chunks) Read(p []byte) (int, error) {
	if b.left == 0 && !b.eof {
		if err := b.next(); err != nil {
			return 0, err
		}
	}
	if b.eof {
		return 0, io.EOF
	}
	n, err := b.br.Read(p[:min(int64(len(p)), b.left)])
	b.left -= int64(n)
	b.crlf = b.left == 0
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

var errChunks = errors.New("its answer's chunked encoding does not parse")

// next reads the CRLF ending the chunk read and the size of the next; a
// zero size and the trailer section end the body.
func (b *chunks) next() error {
	line := func() ([]byte, error) {
		l, err := b.br.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			return nil, errChunks
		case err == io.EOF:
			return nil, io.ErrUnexpectedEOF
		case err != nil:
			return nil, err
		}
		l, ok := bytes.CutSuffix(l, []byte("\r\n"))
		if !ok || bytes.IndexByte(l, '\r') >= 0 {
			return nil, errChunks // each line ends with CRLF, and holds no other CR
		}
		return l, nil
	}
	if b.crlf {
		l, err := line()
		if err != nil {
			return err
		}
		if len(l) != 0 {
			return errChunks
		}
		b.crlf = false
	}
	l, err := line()
	if err != nil {
		return err
	}
	l, _, _ = bytes.Cut(l, []byte(";")) // extensions
	// ParseUint takes hex digits only: no sign, no 0x, no space.
	size, err := strconv.ParseUint(string(l), 16, 62)
	if err != nil {
		return errChunks
	}
	if size > 0 {
		b.left = int64(size)
		return nil
	}
	for n := 0; ; n++ { // the trailer section, read and ignored
		l, err := line()
		if err != nil {
			return err
		}
		if len(l) == 0 {
			b.eof = true
			return nil
		}
		if n > 64 {
			return errChunks
		}
	}
}

// ended reports whether the body's end is read, reading it when it is
// already buffered (the runner writes it with the result): a call never
// waits for it.
func (b *chunks) ended() bool {
	if b.eof {
		return true
	}
	if b.left != 0 {
		return false
	}
	want := "0\r\n\r\n"
	if b.crlf {
		want = "\r\n" + want
	}
	if b.br.Buffered() < len(want) {
		return false
	}
	if p, _ := b.br.Peek(len(want)); string(p) != want {
		return false
	}
	b.br.Discard(len(want))
	b.eof = true
	return true
}
