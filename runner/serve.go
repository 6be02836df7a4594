package runner

import (
	"bufio"
	"bytes"
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/textproto"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/toolgate/toolgate/tool"
)

// Serve serves the runner on ln until ctx ends, then stops: ln is closed,
// idle connections too, and calls in progress get 5 s to answer.
//
// A connection's calls (POST /sandboxes/{id}/call) are served on the
// connection's own goroutine, from its head to its answer, written in one
// write (the lean path): none of net/http's per-request goroutine, which
// reads ahead to learn that the caller went away, and the wake-ups of
// starting and stopping it. The lean path takes only a call it can serve
// as it is: its whole head in the first read of it (at most leanHead
// bytes), HTTP/1.1, the path's sandbox open, the token of its id, this
// release's VersionHeader, a Content-Length within MaxCallBytes, no
// Transfer-Encoding, Expect, Upgrade or Connection, every header a token
// and a valid value, no header it reads twice. Any other request (the
// probes, MCP, management, everything refused) goes, with its
// connection, to a net/http server of Handler, which answers it as
// before: so is every refusal (401 first) answered by the same code. A
// lean call whose caller closes the connection while it runs for longer
// than watchAfter is cancelled, as net/http would (on unix: the watch
// peeks at the socket, reading nothing of it; elsewhere it is not
// watched).
func (r *Runner) Serve(ctx context.Context, ln net.Listener) error {
	l := &lean{r: r, handed: make(chan net.Conn), stop: make(chan struct{}), addr: ln.Addr(),
		conns: map[net.Conn]*watch{}, slots: map[net.Conn]*slot{}}
	h := r.Handler()
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		h.ServeHTTP(w, req)
		// Decided: shown a token (proven), or answered without one, this
		// before the answer is flushed.
		if s, ok := req.Context().Value(slotKey{}).(*slot); ok {
			s.decided()
		}
	}), ReadHeaderTimeout: headerTimeout, IdleTimeout: leanIdle, MaxHeaderBytes: 64 << 10,
		ConnContext: func(ctx context.Context, nc net.Conn) context.Context {
			return context.WithValue(ctx, slotKey{}, nc.(*handedConn).s)
		}}
	failed := make(chan error, 2)
	go func() { failed <- hs.Serve(l) }()
	go func() { failed <- l.accept(ln) }()
	var err error
	select {
	case err = <-failed:
	case <-ctx.Done():
	}
	ln.Close()
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l.shut()
	hs.Shutdown(shut)
	l.wait(shut)
	return err
}

// Lean path bounds: a connection's first head must come within
// headerTimeout of its accept; a call's head is read whole in one read of
// at most leanHead bytes; a connection idle after a call is closed after
// leanIdle; a call running longer than watchAfter is watched for its
// caller's close. At most Options.MaxConns connections are held at once,
// handed ones included: a connection whose head comes slowly is held up
// to headerTimeout here, then as long again by net/http. A connection
// beyond the cap takes the slot of the oldest held one on which no
// request has shown a token and none is in (that one is closed): silent
// connections cannot evict one that showed a token, nor a gateway's new
// connection whose first request came (waiting in its socket, or its head
// whole in hand and being decided) but is not read or decided yet, however
// many arrive meanwhile (up to headerTimeout from its accept; once a request
// on it is answered without a token it is spared no more). One beyond is refused only when every held one
// has shown a token or has its request in.
const (
	headerTimeout = 10 * time.Second // net/http's ReadHeaderTimeout
	leanHead      = 4 << 10
	watchAfter    = 10 * time.Millisecond
)

// leanIdle is how long a connection may be idle after a request, on either
// path (net/http's IdleTimeout); a variable so a test can shorten it.
var leanIdle = 2 * time.Minute

// lean serves connections: calls itself, other requests through the
// net/http server it is the listener of (Accept hands them over).
type lean struct {
	r      *Runner
	addr   net.Addr
	handed chan net.Conn
	stop   chan struct{}

	mu       sync.Mutex
	slots    map[net.Conn]*slot  // the connections held, handed ones included
	unproven list.List           // the held slots that showed no token, oldest first
	conns    map[net.Conn]*watch // the lean path's; nil: idle, else serving a call
	stopped  bool
	wg       sync.WaitGroup
	look     *time.Timer // looks for calls to watch, every watchAfter while any runs
	armed    bool
}

// watch is a call in progress on a connection, whose caller's close, once
// looked for (started), cancels it.
type watch struct {
	nc      net.Conn
	cancel  context.CancelFunc
	since   time.Time
	started bool // a goroutine watches the connection (run)
	ended   bool // the call is over
	done    chan struct{}
}

// accept serves each connection ln accepts until ln fails or is closed.
func (l *lean) accept(ln net.Listener) error {
	for delay := time.Duration(0); ; {
		nc, err := ln.Accept()
		if err != nil {
			var te interface{ Temporary() bool }
			if errors.As(err, &te) && te.Temporary() && !errors.Is(err, net.ErrClosed) {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second) // as net/http waits
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		l.mu.Lock()
		if l.stopped {
			l.mu.Unlock()
			nc.Close()
			return net.ErrClosed
		}
		if limit := l.r.maxConns(); len(l.slots) >= limit && !l.evictLocked() {
			l.mu.Unlock()
			// The answer fits any socket's send buffer: the write does
			// not wait for the caller.
			nc.SetWriteDeadline(time.Now().Add(time.Second))
			nc.Write(errorAnswer(nil, "503 Service Unavailable", true, "unavailable",
				fmt.Sprintf("the runner holds at most %d connections at once (--max-connections), each with a request that showed a token or is being read; retry on a connection it can take", limit)))
			nc.Close()
			continue
		}
		s := l.holdLocked(nc)
		l.conns[nc] = nil
		l.wg.Add(1)
		l.mu.Unlock()
		go l.serve(s)
	}
}

// slot is a connection held: counted against Options.MaxConns from its
// accept until release.
type slot struct {
	l      *lean
	nc     net.Conn
	proven bool          // (written under lean.mu) a request on it showed a token: it is kept
	heard  bool          // (lean.mu) its first request is in: read whole and being decided
	spare  time.Time     // (lean.mu) until when its first request, once in, is spared: accept + headerTimeout; zero once decided
	elem   *list.Element // (lean.mu) in lean.unproven; nil once proven or released
}

// holdLocked gives nc a slot, the newest. (l.mu held.)
func (l *lean) holdLocked(nc net.Conn) *slot {
	s := &slot{l: l, nc: nc, spare: time.Now().Add(headerTimeout)}
	s.elem = l.unproven.PushBack(s)
	l.slots[nc] = s
	return s
}

// evictLocked closes the oldest held connection on which no request has
// shown a token and the first is not in (heard, or bytes waiting in its
// socket: the request is about to show one, or to be answered), its slot
// free for another; false: there is none. Only a first request not decided
// yet, and within headerTimeout of its connection's accept, is spared: a
// connection answered without a token, or a head net/http never finishes
// deciding, cannot hold its slot with requests it sends and does not read
// the answers of. (l.mu held.)
func (l *lean) evictLocked() bool {
	now := time.Now()
	for e := l.unproven.Front(); e != nil; e = e.Next() {
		s := e.Value.(*slot)
		if now.Before(s.spare) && (s.heard || waiting(s.nc)) {
			continue
		}
		l.forgetLocked(s.nc)
		s.nc.Close() // its reader fails and lets it go (release: a no-op)
		return true
	}
	return false
}

// forgetLocked frees nc's slot (again: a no-op). (l.mu held.)
func (l *lean) forgetLocked(nc net.Conn) {
	s := l.slots[nc]
	if s == nil {
		return
	}
	delete(l.slots, nc)
	if s.elem != nil {
		l.unproven.Remove(s.elem)
		s.elem = nil
	}
}

// release frees nc's slot (again: a no-op).
func (l *lean) release(nc net.Conn) {
	l.mu.Lock()
	l.forgetLocked(nc)
	l.mu.Unlock()
}

// prove marks s as having carried a request that showed a token, kept
// from now on; false: it was closed to free its slot (its request must
// not run: no answer would reach its caller). Only the server of its
// connection calls it (the lean path's goroutine, then net/http's, one
// request at a time), so proven, which only prove writes, is read
// without the lock: a proven slot is never evicted.
func (s *slot) prove() bool {
	if s.proven {
		return true
	}
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	_, held := s.l.slots[s.nc]
	s.proven = held
	if held && s.elem != nil {
		s.l.unproven.Remove(s.elem)
		s.elem = nil
	}
	return held
}

// hear marks s's first request as in (read whole, being decided: not to be
// evicted) or no longer (not whole in one read).
func (s *slot) hear(in bool) {
	s.l.mu.Lock()
	s.heard = in
	s.l.mu.Unlock()
}

// decided marks s's request as answered without a token: s is spared no
// more, whatever waits in its socket.
func (s *slot) decided() {
	s.l.mu.Lock()
	s.heard, s.spare = false, time.Time{}
	s.l.mu.Unlock()
}

// slotKey is the context key of a handed connection's slot in its
// requests' contexts.
type slotKey struct{}

// proveRequest marks the connection of req, when Serve handed it to
// net/http, as having carried a request that showed a token; false: it
// was closed to free its slot. (A request Serve did not hand over: true.)
func (r *Runner) proveRequest(req *http.Request) bool {
	s, ok := req.Context().Value(slotKey{}).(*slot)
	return !ok || s.prove()
}

// Accept is the next connection handed to net/http.
func (l *lean) Accept() (net.Conn, error) {
	select {
	case nc := <-l.handed:
		return nc, nil
	case <-l.stop:
		return nil, net.ErrClosed
	}
}

// Close stops handing connections over (net/http's Shutdown).
func (l *lean) Close() error { l.shut(); return nil }

func (l *lean) Addr() net.Addr { return l.addr }

// shut stops the lean path: idle connections are closed, busy ones after
// their call.
func (l *lean) shut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return
	}
	l.stopped = true
	close(l.stop)
	for nc, w := range l.conns {
		if w == nil {
			nc.Close()
		}
	}
}

// wait waits until the lean connections are done, or ctx ends (then it
// closes them).
func (l *lean) wait(ctx context.Context) {
	done := make(chan struct{})
	go func() { l.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		l.mu.Lock()
		for nc := range l.conns {
			nc.Close()
		}
		l.mu.Unlock()
	}
}

// busy marks nc serving the call w (nil: idle again); false: the runner
// stops, the connection must close.
func (l *lean) busy(nc net.Conn, w *watch) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.conns[nc] = w
	if w != nil && !l.armed {
		l.armed = true
		if l.look == nil {
			l.look = time.AfterFunc(watchAfter, l.watch)
		} else {
			l.look.Reset(watchAfter)
		}
	}
	return !l.stopped
}

// watch starts watching each call that has run for watchAfter, and looks
// again later while any runs: one timer for all calls, armed at most once
// per watchAfter, so that a short call sets none.
func (l *lean) watch() {
	l.mu.Lock()
	defer l.mu.Unlock()
	now, running := time.Now(), false
	for _, w := range l.conns {
		if w == nil || w.ended {
			continue
		}
		running = true
		if !w.started && now.Sub(w.since) >= watchAfter {
			w.started = true
			go l.run(w)
		}
	}
	if running {
		l.look.Reset(watchAfter)
	} else {
		l.armed = false
	}
}

// run watches w's connection until its caller closes it (the call is
// cancelled), sends more (the watch stops, the connection is kept: as
// net/http, which stops reading ahead at a byte), or the call's end stops
// it (end). It reads nothing of the connection, whatever its buffer holds
// (awaitClose peeks at the socket), so neither a request sent during the
// call nor one sent with it is lost or keeps its caller's close unseen.
// The idle deadline does not apply while the call runs.
func (l *lean) run(w *watch) {
	defer close(w.done)
	for {
		l.mu.Lock()
		if w.ended {
			l.mu.Unlock()
			return
		}
		w.nc.SetReadDeadline(time.Time{}) // before end's, which ends the wait
		l.mu.Unlock()
		_, closed, err := awaitClose(w.nc)
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			continue // end's, or the idle one: run looks at ended
		case closed:
			w.cancel()
		}
		return
	}
}

// end ends w's call: a watch started is stopped.
func (l *lean) end(w *watch) {
	l.mu.Lock()
	w.ended = true
	started := w.started
	l.mu.Unlock()
	if !started {
		return
	}
	w.nc.SetReadDeadline(time.Unix(1, 0)) // ends run's wait (ended is set)
	<-w.done
	w.nc.SetReadDeadline(time.Now().Add(leanIdle))
}

// handedConn is a connection handed to net/http with what was read of it;
// its Close frees its slot.
type handedConn struct {
	net.Conn
	br *bufio.Reader
	s  *slot
}

func (c *handedConn) Read(p []byte) (int, error) { return c.br.Read(p) }

func (c *handedConn) Close() error {
	c.s.l.release(c.Conn)
	return c.Conn.Close()
}

// serve serves the calls of s's connection until a request is not one
// (it is handed over with the connection), it ends or the runner stops.
func (l *lean) serve(s *slot) {
	defer l.wg.Done()
	nc, handed := s.nc, false
	defer func() {
		if !handed {
			l.mu.Lock()
			delete(l.conns, nc)
			l.forgetLocked(nc)
			l.mu.Unlock()
			nc.Close()
		}
	}()
	var answering atomic.Bool // the answer to the request being served has begun (a progress report)
	defer func() {
		// As net/http does, a panic ends the connection, not the runner;
		// the caller gets a 500 when nothing of the answer went out.
		if v := recover(); v != nil {
			buf := make([]byte, 64<<10)
			log.Printf("runner: panic serving %v: %v\n%s", nc.RemoteAddr(), v, buf[:runtime.Stack(buf, false)])
			if !answering.Load() {
				nc.Write(errorAnswer(nil, "500 Internal Server Error", true, "internal", "the runner failed serving the call"))
			}
		}
	}()
	br := bufio.NewReaderSize(nc, leanHead)
	var (
		out     []byte
		refresh time.Time // when to push the idle deadline on; zero: no call served yet
	)
	// Until its first call, a connection has net/http's ReadHeaderTimeout
	// from its accept to send the head (a head handed over gets net/http's
	// own); only a caller with a valid token is given leanIdle.
	nc.SetReadDeadline(time.Now().Add(headerTimeout))
	for first := true; ; first = false {
		if first {
			// The first request is marked in while it still waits in the
			// socket (which evictLocked looks at), before it is read, so
			// that no moment lies between the two.
			peeked, closed, err := awaitClose(nc)
			if closed || err != nil {
				return
			}
			if peeked {
				s.hear(true)
			}
		}
		if _, err := br.Peek(1); err != nil {
			return
		}
		b, _ := br.Peek(br.Buffered())
		h, ok := l.parse(b)
		if first && h.size == 0 {
			s.hear(false) // not whole in one read: a slow head holds no slot
		}
		var sb *Sandbox
		if ok {
			sb, ok = l.open(h)
		}
		if ok && !s.prove() {
			return // closed to free its slot
		}
		if !ok {
			// No longer the lean path's: a stop now must not close it
			// under net/http, whose Shutdown answers it.
			l.mu.Lock()
			delete(l.conns, nc)
			l.mu.Unlock()
			select {
			case l.handed <- &handedConn{Conn: nc, br: br, s: s}:
				handed = true
			case <-l.stop:
			}
			return
		}
		br.Discard(h.size)
		if now := time.Now(); now.After(refresh) {
			nc.SetReadDeadline(now.Add(leanIdle))
			refresh = now.Add(leanIdle / 2)
		}
		var keep bool
		if out, keep = l.call(nc, br, h, sb, out[:0], &answering); !keep || !l.busy(nc, nil) {
			return
		}
		answering.Store(false)
		if cap(out) > 64<<10 {
			out = nil // a large answer's buffer is not kept
		}
	}
}

// callHead is what the lean path reads of a call's head.
type callHead struct {
	size                             int // bytes of the head
	id, auth, version, approved, ack string
	length                           int
}

// parse reads the head at the start of b: ok when it is all there and a
// call the lean path serves (Serve).
func (l *lean) parse(b []byte) (h callHead, ok bool) {
	end := bytes.Index(b, []byte("\r\n\r\n"))
	if end < 0 {
		return h, false
	}
	h.size = end + 4
	lines := strings.Split(string(b[:end]), "\r\n")
	path, found := strings.CutPrefix(lines[0], "POST ")
	if !found {
		return h, false
	}
	path, found = strings.CutSuffix(path, "/call HTTP/1.1")
	if !found {
		return h, false
	}
	if h.id, found = strings.CutPrefix(path, "/sandboxes/"); !found || ValidID(h.id) != nil {
		return h, false
	}
	if len(lines) > 65 {
		return h, false
	}
	host, length := false, ""
	for _, line := range lines[1:] {
		name, value, found := strings.Cut(line, ":")
		value = strings.Trim(value, " \t")
		if !found || !httpguts.ValidHeaderFieldName(name) || !httpguts.ValidHeaderFieldValue(value) {
			return h, false
		}
		var into *string
		// net/http's own canonical form of a name (a valid token's
		// letters, cased): one comparison per header.
		switch textproto.CanonicalMIMEHeaderKey(name) {
		case "Host":
			if host || !httpguts.ValidHostHeader(value) {
				return h, false // net/http refuses it
			}
			host = true
			continue
		case "Authorization":
			into = &h.auth
		case "Content-Length":
			into = &length
		case VersionHeader:
			into = &h.version
		case ApprovedHeader:
			into = &h.approved
		case AckHeader:
			into = &h.ack
		case "Transfer-Encoding", "Expect", "Upgrade", "Connection", "Te", "Trailer":
			return h, false
		default:
			continue
		}
		if *into != "" || value == "" {
			return h, false // twice, or empty: net/http says what it makes of it
		}
		*into = value
	}
	n, err := strconv.ParseUint(length, 10, 32) // digits only
	if !host || err != nil || n > MaxCallBytes || h.version != CallVersion {
		return h, false
	}
	h.length = int(n)
	return h, true
}

// open is the sandbox of a call with its id's token, open: ok false for
// any other (net/http answers it).
func (l *lean) open(h callHead) (*Sandbox, bool) {
	if !l.r.authorized(h.id, h.auth) {
		return nil, false
	}
	s, err := l.r.sandbox(h.id)
	return s, err == nil
}

// chunk appends line to out as a chunk of a chunked body.
func chunk(out, line []byte) []byte {
	out = strconv.AppendInt(out, int64(len(line)), 16)
	out = append(out, "\r\n"...)
	out = append(out, line...)
	return append(out, "\r\n"...)
}

// errorAnswer appends to out the answer of status (its code and reason)
// with the error body {"error": code, "message": msg} (as answer writes
// it); closing: the connection closes after it.
func errorAnswer(out []byte, status string, closing bool, code, msg string) []byte {
	b, _ := json.Marshal(map[string]any{"error": code, "message": msg})
	b = append(b, '\n')
	out = append(append(out, "HTTP/1.1 "...), status...)
	out = append(out, "\r\nContent-Type: application/json\r\nCache-Control: no-store\r\n"...)
	if closing {
		out = append(out, "Connection: close\r\n"...)
	}
	out = append(out, "Content-Length: "...)
	out = strconv.AppendInt(out, int64(len(b)), 10)
	return append(append(out, "\r\n\r\n"...), b...)
}

const leanAnswer = "HTTP/1.1 200 OK\r\nContent-Type: " + CallContentType + "\r\n" + VersionHeader + ": " + CallVersion +
	"\r\nCache-Control: no-store\r\nTransfer-Encoding: chunked\r\n\r\n"

// call reads the body of the call h (its head read) from br, runs it in s
// and answers on nc: its progress as it comes, its result and the end of
// the answer in one write. keep: nc may carry another request.
// answering is set once a progress report is written.
func (l *lean) call(nc net.Conn, br *bufio.Reader, h callHead, s *Sandbox, out []byte, answering *atomic.Bool) ([]byte, bool) {
	var body []byte
	peeked := br.Buffered() >= h.length
	if peeked {
		body, _ = br.Peek(h.length)
	} else {
		body = make([]byte, h.length)
		if _, err := io.ReadFull(br, body); err != nil {
			return out, false
		}
	}
	c, err := DecodeCall(body)
	if peeked {
		br.Discard(h.length) // (ReadFull consumed it; what follows is the next request)
	}
	if msg := invalidCall(c, err); msg != "" {
		out = errorAnswer(out, "400 Bad Request", false, "invalid_request", msg)
		_, err := nc.Write(out)
		return out, err == nil
	}
	if epoch, seq, ok := ParseAck(h.ack); ok && s.Events != nil {
		s.Events.Ack(epoch, seq)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if h.approved == "1" {
		ctx = tool.WithApproval(ctx)
	}
	// The caller's close cancels a call that runs long enough to be
	// watched (watch).
	w := &watch{nc: nc, cancel: cancel, since: time.Now(), done: make(chan struct{})}
	if !l.busy(nc, w) {
		return out, false
	}
	var (
		mu   sync.Mutex
		done bool
		werr error
	)
	out = append(out, leanAnswer...)
	ctx = tool.WithProgress(ctx, func(d, t float64, m string) {
		line, err := progressLine(d, t, m)
		if err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if done || werr != nil {
			return
		}
		out = chunk(out, line)
		answering.Store(true)
		_, werr = nc.Write(out)
		out = out[:0]
	})
	res := s.Call(ctx, c.Name, c.Arguments)
	mu.Lock()
	done = true
	mu.Unlock()
	if l.end(w); werr != nil {
		return out, false
	}
	out = chunk(out, resultLine(c.Name, res))
	out = append(out, "0\r\n\r\n"...)
	_, err = nc.Write(out)
	return out, err == nil && ctx.Err() == nil
}
