package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"os"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The go-sdk hands a response to its caller as soon as it is read, but
// queues notifications for a handler goroutine, so a log message or
// progress notification that the upstream sent before its answer could be
// handled after the call ended (and find no client to go to). Log and
// progress notifications are therefore handled where messages are read, in
// order: by tapConn for command upstreams and by tapTransport (the HTTP
// response streams) for HTTP ones.

// tapMessage handles a log or progress notification as it is read.
func (u *Upstream) tapMessage(msg jsonrpc.Message) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.ID.IsValid() {
		return
	}
	switch req.Method {
	case "notifications/message":
		var p mcp.LoggingMessageParams
		if json.Unmarshal(req.Params, &p) == nil {
			u.forwardLog(&p)
		}
	case "notifications/progress":
		var p mcp.ProgressNotificationParams
		if json.Unmarshal(req.Params, &p) == nil {
			u.forwardProgress(&p)
		}
	}
}

// tapConn taps the messages read from a connection.
type tapConn struct {
	mcp.Connection
	u *Upstream
}

func (c tapConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		c.u.tapMessage(msg)
	}
	return msg, err
}

// tapCommand is a command transport whose connection is tapped.
type tapCommand struct {
	*mcp.CommandTransport
	u *Upstream
}

func (t tapCommand) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.CommandTransport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return tapConn{c, t.u}, nil
}

// tapLaunched is the transport of a command upstream started by its
// Config.Launch: newline-delimited JSON over the streams it returns,
// tapped.
type tapLaunched struct{ u *Upstream }

func (t tapLaunched) Connect(ctx context.Context) (mcp.Connection, error) {
	p, err := t.u.cfg.Launch(ctx, &t.u.cfg)
	if err != nil {
		return nil, err
	}
	t.u.mu.Lock()
	t.u.proc = p
	t.u.mu.Unlock()
	var r io.ReadCloser = p
	var w io.WriteCloser = nopWriteCloser{p}
	if pp, ok := p.(Piped); ok {
		// The pipes themselves, as a plain child's: read in the
		// connection's Read with raw system calls, no reader goroutine.
		// The connection's Close closes stdout (ending a Read), then
		// stops the process.
		stdout, stdin := pp.Pipes()
		r, w = stdout, closesProcess{stdin, p}
	}
	c, err := (&mcp.IOTransport{Reader: r, Writer: w}).Connect(ctx)
	if err != nil {
		p.Close()
		return nil, err
	}
	return tapConn{c, t.u}, nil
}

// nopWriteCloser is the writing side of a launched process, whose Close
// (the reading side's) stops the process.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// closesProcess is a Piped process's stdin whose Close stops the process.
type closesProcess struct {
	*os.File
	p io.Closer
}

func (c closesProcess) Close() error { return c.p.Close() }

// tapTransport taps the server-sent events of HTTP responses.
type tapTransport struct {
	base http.RoundTripper
	u    *Upstream
}

func (t tapTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := t.base.RoundTrip(r)
	if err != nil || res.Body == nil {
		return res, err
	}
	if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt == "text/event-stream" {
		res.Body = &sseTap{ReadCloser: res.Body, u: t.u}
	}
	return res, nil
}

// maxTapEvent bounds the bytes kept of one event; a longer one is passed
// on untapped.
const maxTapEvent = 8 << 20

// sseTap parses the events passing through a response body and taps each
// complete one before the reader sees any of the bytes it read with it.
type sseTap struct {
	io.ReadCloser
	u       *Upstream
	buf     []byte // the current, incomplete line
	data    []byte // the data lines of the current event
	skip    bool   // the current event is too long to tap
	lastEOL byte
}

func (s *sseTap) Read(p []byte) (int, error) {
	n, err := s.ReadCloser.Read(p)
	s.feed(p[:n])
	return n, err
}

// feed consumes bytes of the stream, line by line (LF, CR or CRLF).
func (s *sseTap) feed(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexAny(b, "\r\n")
		if i < 0 {
			s.add(b)
			return
		}
		eol := b[i]
		if i == 0 && eol == '\n' && s.lastEOL == '\r' && len(s.buf) == 0 {
			s.lastEOL = 0 // the LF of a CRLF
			b = b[1:]
			continue
		}
		s.add(b[:i])
		s.line()
		s.lastEOL = eol
		b = b[i+1:]
	}
}

func (s *sseTap) add(b []byte) {
	s.lastEOL = 0
	if len(s.buf)+len(b) > maxTapEvent {
		s.skip, s.buf = true, s.buf[:0]
		return
	}
	s.buf = append(s.buf, b...)
}

// line handles one complete line.
func (s *sseTap) line() {
	l := s.buf
	s.buf = s.buf[:0]
	if len(l) == 0 { // end of event
		if !s.skip && len(s.data) > 0 {
			if msg, err := jsonrpc.DecodeMessage(bytes.TrimSuffix(s.data, []byte("\n"))); err == nil {
				s.u.tapMessage(msg)
			}
		}
		s.data, s.skip = s.data[:0], false
		return
	}
	if v, ok := bytes.CutPrefix(l, []byte("data:")); ok && !s.skip {
		v = bytes.TrimPrefix(v, []byte(" "))
		if len(s.data)+len(v) > maxTapEvent {
			s.skip = true
			return
		}
		s.data = append(append(s.data, v...), '\n')
	}
}
