package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ProxyConfig configures a Proxy.
type ProxyConfig struct {
	// Policy says where traffic may go and receives every decision. Required.
	Policy *Policy
	// GetOnly forwards only plain-HTTP GET and HEAD requests without a body
	// and refuses CONNECT: inside a TLS tunnel the method cannot be seen, so
	// a GET-only proxy cannot allow tunnels. It keeps an agent from changing
	// things (POST, PUT, DELETE…), not from sending data out in a URL.
	GetOnly bool
	// AllowMissingSNI lets a CONNECT tunnel to a host name proceed when the
	// ClientHello names no server. By default it is refused, since the
	// server name is what the proxy holds the tunnel to.
	AllowMissingSNI bool
	// MaxConns caps the client connections served at once; default 256.
	MaxConns int
	// IdleTimeout closes a connection after this long without a byte in
	// either direction; default 60 s.
	IdleTimeout time.Duration
	// MaxDuration caps the life of a client connection; default 30 min.
	MaxDuration time.Duration
	// MaxBytes caps the bytes one client connection exchanges with the
	// outside (both directions together); default 1 GiB.
	MaxBytes int64
	// HeadTimeout bounds reading a request head, and the TLS ClientHello
	// after a CONNECT; default 10 s.
	HeadTimeout time.Duration
}

// Proxy is an HTTP proxy that enforces a Policy: CONNECT tunnels for TLS
// (the ClientHello's server name must equal the CONNECT host) and plain
// HTTP requests in absolute form. It is safe for concurrent use.
type Proxy struct {
	cfg    ProxyConfig
	pol    *Policy
	slots  chan struct{}
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	lns    map[net.Listener]struct{}
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

const maxHeadBytes = 64 << 10

// NewProxy returns a proxy for c; serve it with Serve or ServeConn.
func NewProxy(c ProxyConfig) (*Proxy, error) {
	if c.Policy == nil {
		return nil, errors.New("egress: ProxyConfig.Policy is required")
	}
	if c.MaxConns <= 0 {
		c.MaxConns = 256
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 60 * time.Second
	}
	if c.MaxDuration <= 0 {
		c.MaxDuration = 30 * time.Minute
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = 1 << 30
	}
	if c.HeadTimeout <= 0 {
		c.HeadTimeout = 10 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Proxy{cfg: c, pol: c.Policy, slots: make(chan struct{}, c.MaxConns), ctx: ctx, cancel: cancel,
		lns: map[net.Listener]struct{}{}, conns: map[net.Conn]struct{}{}}, nil
}

// Serve accepts connections on ln and serves each in its own goroutine
// until ln fails or the proxy is closed (then it returns net.ErrClosed).
// ln may be any listener: TCP on loopback, or a Unix socket bridged into a
// sandbox.
func (p *Proxy) Serve(ln net.Listener) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return net.ErrClosed
	}
	p.lns[ln] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.lns, ln)
		p.mu.Unlock()
	}()
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			p.mu.Lock()
			closed := p.closed
			p.mu.Unlock()
			if closed {
				return net.ErrClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.ServeConn(p.ctx, c)
		}()
	}
}

// Dial opens a connection to the proxy within this process and serves it
// with ctx (see ServeConn and WithOnDecision) until it ends, ctx is
// cancelled or the proxy is closed. No port is opened: the two ends are a
// Unix socket pair (net.Pipe where there is none), so either side may
// half-close. It has the shape of sandbox.Network.Dial.
func (p *Proxy) Dial(ctx context.Context) (net.Conn, error) {
	client, server, err := socketPair()
	if err != nil {
		return nil, fmt.Errorf("egress: %w", err)
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		client.Close()
		server.Close()
		return nil, net.ErrClosed
	}
	p.wg.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.wg.Done()
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(p.ctx, cancel)
		defer stop()
		p.ServeConn(ctx, server)
	}()
	return client, nil
}

// Policy returns the policy the proxy enforces.
func (p *Proxy) Policy() *Policy { return p.pol }

// Close stops every Serve loop, closes every connection being served and
// waits for their goroutines to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for ln := range p.lns {
		ln.Close()
	}
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.cancel()
	p.wg.Wait()
	return nil
}

func (p *Proxy) track(c net.Conn, on bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on {
		if p.closed {
			return false
		}
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
	return true
}

// ServeConn serves one client connection (several requests when the client
// keeps it alive) and closes it. It returns when the connection ends or ctx
// is cancelled.
func (p *Proxy) ServeConn(ctx context.Context, c net.Conn) {
	defer c.Close()
	if !p.track(c, true) {
		return
	}
	defer p.track(c, false)
	select {
	case p.slots <- struct{}{}:
		defer func() { <-p.slots }()
	default:
		p.pol.report(ctx, decisionOf("", "", 0, "", "", &Error{Reason: TooManyConns,
			Detail: fmt.Sprintf("%d connections are open already", p.cfg.MaxConns)}))
		c.SetWriteDeadline(time.Now().Add(time.Second))
		io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n"+
			"X-Toolgate-Egress: "+string(TooManyConns)+"\r\n\r\n")
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()

	lim := newLimits(p.cfg.IdleTimeout, p.cfg.MaxDuration, p.cfg.MaxBytes)
	cc := &meteredConn{Conn: c, l: lim}
	lr := &io.LimitedReader{R: cc, N: maxHeadBytes}
	br := bufio.NewReader(lr)
	for {
		lr.N = maxHeadBytes
		cc.head.Store(time.Now().Add(p.cfg.HeadTimeout).UnixNano())
		req, err := http.ReadRequest(br)
		cc.head.Store(0)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, errLimit) && !errors.Is(err, net.ErrClosed) {
				e := &Error{Reason: BadRequest, Detail: "unreadable request: " + err.Error()}
				p.pol.report(ctx, decisionOf("", "", 0, "", "", e))
				p.refuse(cc, e)
			}
			return
		}
		lr.N = math.MaxInt64
		if req.Method == http.MethodConnect {
			p.tunnel(ctx, cc, br, req, lim)
			return
		}
		if !p.forward(ctx, cc, req, lim) {
			return
		}
	}
}

// status is the HTTP status a proxy answers for e.
func status(e *Error) int {
	switch e.Reason {
	case DNSFailed, DialFailed:
		var ne net.Error
		if errors.As(e.Err, &ne) && ne.Timeout() || errors.Is(e.Err, context.DeadlineExceeded) {
			return http.StatusGatewayTimeout
		}
		return http.StatusBadGateway
	case BadRequest, InvalidHost:
		return http.StatusBadRequest
	case MethodNotAllowed:
		return http.StatusMethodNotAllowed
	case TooManyConns:
		return http.StatusServiceUnavailable
	}
	return http.StatusForbidden
}

// refuse answers an HTTP error for e and asks the client to close.
func (p *Proxy) refuse(w io.Writer, e *Error) {
	body := "toolgate egress proxy: " + e.Error() + "\n"
	if e.Reason == PrivateAddress || e.Reason == MetadataAddress {
		body += "Internal, loopback and cloud-metadata addresses are refused to prevent server-side request forgery.\n"
	}
	code := status(e)
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\n"+
		"Connection: close\r\nX-Toolgate-Egress: %s\r\n\r\n%s", code, http.StatusText(code), len(body), e.Reason, body)
}

// splitTarget reads the host and port of a CONNECT authority or a URL host.
func splitTarget(hostport string, defaultPort int) (string, int, error) {
	host, portText, err := net.SplitHostPort(hostport)
	if err != nil {
		if defaultPort == 0 || strings.HasSuffix(hostport, ":") || strings.Count(hostport, ":") == 1 {
			return "", 0, fmt.Errorf("%q: %w", hostport, err)
		}
		return hostport, defaultPort, nil
	}
	port, err := parsePort(portText)
	if err != nil {
		return "", 0, err
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return host, port, nil
}

// tunnel serves a CONNECT request: the name and address checks, then 200,
// then the ClientHello, whose server name must be the CONNECT host, then a
// connection to the checked address, then bytes both ways within limits.
func (p *Proxy) tunnel(ctx context.Context, cc *meteredConn, br *bufio.Reader, req *http.Request, lim *limits) {
	const method = http.MethodConnect
	fail := func(t target, raw string, addr string, e *Error) {
		host := t.host.String()
		if host == "" {
			host = raw
		}
		p.pol.report(ctx, decisionOf(method, host, t.port, addr, t.rule, e))
	}
	hostname, port, err := splitTarget(req.RequestURI, 0)
	if err != nil {
		e := &Error{Reason: BadRequest, Host: req.RequestURI, Detail: "CONNECT needs host:port: " + err.Error()}
		fail(target{}, req.RequestURI, "", e)
		p.refuse(cc, e)
		return
	}
	if p.cfg.GetOnly {
		e := &Error{Reason: MethodNotAllowed, Host: hostname, Port: port,
			Detail: "the proxy is in GET-only mode, and a method inside a TLS tunnel cannot be checked"}
		fail(target{port: port}, hostname, "", e)
		p.refuse(cc, e)
		return
	}
	t, e := p.pol.check(hostname, port)
	if e != nil {
		fail(t, hostname, "", e)
		p.refuse(cc, e)
		return
	}
	addrs, e := p.pol.lookup(ctx, t)
	if e != nil {
		fail(t, hostname, e.Addr, e)
		p.refuse(cc, e)
		return
	}
	if _, err := io.WriteString(cc, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	cc.head.Store(time.Now().Add(p.cfg.HeadTimeout).UnixNano())
	hello, sni, hasSNI, err := readClientHello(br)
	cc.head.Store(0)
	if err != nil {
		e := &Error{Reason: NotTLS, Host: t.host.String(), Port: port, Detail: err.Error()}
		if !errors.Is(err, errNotTLS) {
			e.Reason = BadRequest
		}
		fail(t, hostname, "", e)
		cc.Write(tlsAlert(alertAccessDenied))
		return
	}
	if e := p.checkSNI(t, sni, hasSNI); e != nil {
		fail(t, hostname, "", e)
		cc.Write(tlsAlert(alertAccessDenied))
		return
	}
	up, addr, e := p.pol.dialAddrs(ctx, "tcp", t, addrs)
	if e != nil {
		fail(t, hostname, e.Addr, e)
		cc.Write(tlsAlert(alertInternalError))
		return
	}
	defer up.Close()
	p.pol.report(ctx, decisionOf(method, t.host.String(), port, addr, t.rule, nil))
	uc := &meteredConn{Conn: up, l: lim, count: true}
	if _, err := uc.Write(hello); err != nil {
		p.reportCut(ctx, method, t, addr, lim)
		return
	}
	stop := context.AfterFunc(ctx, func() { up.Close() })
	defer stop()
	splice(cc, br, uc)
	p.reportCut(ctx, method, t, addr, lim)
}

// checkSNI holds a tunnel to its CONNECT host: the ClientHello must name
// that host exactly (after the same normalisation); a tunnel to an IP
// literal must name no server.
func (p *Proxy) checkSNI(t target, sni string, hasSNI bool) *Error {
	host := t.host.String()
	switch {
	case !hasSNI && (t.host.isIP() || p.cfg.AllowMissingSNI):
		return nil
	case !hasSNI:
		return &Error{Reason: SNIMissing, Host: host, Port: t.port,
			Detail: "the TLS ClientHello names no server; the proxy requires it to name the CONNECT host"}
	case t.host.isIP():
		return &Error{Reason: SNIMismatch, Host: host, Port: t.port,
			Detail: fmt.Sprintf("the TLS ClientHello names %q but the tunnel is to an IP address", sni)}
	}
	h, err := parseHost(sni)
	if err != nil || h.isIP() || h.name != t.host.name {
		return &Error{Reason: SNIMismatch, Host: host, Port: t.port,
			Detail: fmt.Sprintf("the TLS ClientHello names %q, not the CONNECT host %q", sni, host)}
	}
	return nil
}

const (
	alertAccessDenied  = 49
	alertInternalError = 80
)

// tlsAlert is a plaintext fatal TLS alert record, the only answer a client
// that has started its handshake understands.
func tlsAlert(desc byte) []byte { return []byte{21, 3, 3, 0, 2, 2, desc} }

// reportCut reports a connection cut by a limit, if one was.
func (p *Proxy) reportCut(ctx context.Context, method string, t target, addr string, lim *limits) {
	if why := lim.cutReason(); why != "" {
		p.pol.report(ctx, decisionOf(method, t.host.String(), t.port, addr, t.rule,
			&Error{Reason: LimitExceeded, Detail: why}))
	}
}

// splice copies bytes both ways until both directions end; a direction
// that ends half-closes the other side so that the peer sees the end.
func splice(client *meteredConn, fromClient io.Reader, up *meteredConn) {
	done := make(chan struct{}, 2)
	go func() {
		io.Copy(up, fromClient)
		up.CloseWrite()
		done <- struct{}{}
	}()
	go func() {
		io.Copy(client, up)
		client.CloseWrite()
		done <- struct{}{}
	}()
	<-done
	if client.l.cutReason() != "" {
		client.Close()
		up.Close()
	}
	<-done
}

// hopHeaders are the headers of one connection, never forwarded.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade", "Expect"}

func removeHopHeaders(h http.Header) {
	for _, f := range h.Values("Connection") {
		for _, name := range strings.Split(f, ",") {
			if name = textproto.TrimString(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// forward serves one plain-HTTP request in absolute form and reports
// whether the client connection may carry another.
func (p *Proxy) forward(ctx context.Context, cc *meteredConn, req *http.Request, lim *limits) bool {
	method := req.Method
	refuse := func(t target, raw, addr string, e *Error) bool {
		host := t.host.String()
		if host == "" {
			host = raw
		}
		p.pol.report(ctx, decisionOf(method, host, t.port, addr, t.rule, e))
		p.refuse(cc, e)
		return false
	}
	if req.URL.Scheme != "http" || req.URL.Host == "" || req.URL.User != nil {
		detail := "a proxy request needs an absolute http:// URL without user information"
		if req.URL.Scheme == "https" {
			detail = "send https:// requests through a CONNECT tunnel"
		}
		return refuse(target{}, req.URL.Host, "", &Error{Reason: BadRequest, Host: req.URL.Host, Detail: detail})
	}
	hostname, port, err := splitTarget(req.URL.Host, 80)
	if err != nil {
		return refuse(target{}, req.URL.Host, "", &Error{Reason: InvalidHost, Host: req.URL.Host, Detail: err.Error()})
	}
	if p.cfg.GetOnly && (method != http.MethodGet && method != http.MethodHead || req.ContentLength != 0 || len(req.TransferEncoding) > 0) {
		return refuse(target{port: port}, hostname, "", &Error{Reason: MethodNotAllowed, Host: hostname, Port: port,
			Detail: "the proxy is in GET-only mode: only GET and HEAD requests without a body pass"})
	}
	up, t, addr, e := p.pol.connect(ctx, "tcp", hostname, port)
	if e != nil {
		return refuse(t, hostname, addr, e)
	}
	defer up.Close()
	p.pol.report(ctx, decisionOf(method, t.host.String(), port, addr, t.rule, nil))
	stop := context.AfterFunc(ctx, func() { up.Close() })
	defer stop()

	out := req.Clone(ctx)
	out.Header = req.Header.Clone()
	removeHopHeaders(out.Header)
	out.Host = t.host.String()
	if t.host.isIP() && t.host.ip.Is6() {
		out.Host = "[" + out.Host + "]"
	}
	if port != 80 {
		out.Host = net.JoinHostPort(t.host.String(), strconv.Itoa(port))
	}
	out.Close = true
	uc := &meteredConn{Conn: up, l: lim, count: true}
	if err := out.Write(uc); err != nil {
		p.reportCut(ctx, method, t, addr, lim)
		return false
	}
	ubr := bufio.NewReader(uc)
	for {
		resp, err := http.ReadResponse(ubr, out)
		if err != nil {
			p.reportCut(ctx, method, t, addr, lim)
			if lim.cutReason() == "" {
				p.refuse(cc, &Error{Reason: DialFailed, Host: t.host.String(), Port: port, Addr: addr,
					Detail: "the upstream answer was unreadable", Err: err})
			}
			return false
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			resp.Body.Close()
			p.refuse(cc, &Error{Reason: BadRequest, Host: t.host.String(), Port: port, Detail: "protocol upgrades are not forwarded"})
			return false
		}
		removeHopHeaders(resp.Header)
		keep := !req.Close && resp.ProtoAtLeast(1, 1) &&
			(resp.ContentLength >= 0 || len(resp.TransferEncoding) > 0 || method == http.MethodHead || resp.StatusCode < 200)
		resp.Close = !keep
		err = resp.Write(cc)
		resp.Body.Close()
		if err != nil {
			p.reportCut(ctx, method, t, addr, lim)
			return false
		}
		if resp.StatusCode >= 200 {
			return keep
		}
	}
}
