package egress

import (
	"errors"
	"net"
	"os"
	"sync/atomic"
	"time"
)

// errLimit is returned by a meteredConn once a limit has cut the connection.
var errLimit = errors.New("egress: connection limit reached")

// limits are the budgets of one client connection, shared by every
// connection it opens upstream: idle time (no byte in either direction),
// total time, and bytes exchanged with the outside.
type limits struct {
	idle     time.Duration
	end      time.Time
	maxBytes int64
	used     atomic.Int64
	last     atomic.Int64 // UnixNano of the last byte moved
	cut      atomic.Pointer[string]
}

func newLimits(idle, total time.Duration, maxBytes int64) *limits {
	l := &limits{idle: idle, end: time.Now().Add(total), maxBytes: maxBytes}
	l.touch()
	return l
}

func (l *limits) touch() { l.last.Store(time.Now().UnixNano()) }

func (l *limits) setCut(why string) { l.cut.CompareAndSwap(nil, &why) }

// cutReason says which limit cut the connection ("" when none did).
func (l *limits) cutReason() string {
	if p := l.cut.Load(); p != nil {
		return *p
	}
	return ""
}

// deadline is when a blocked read or write must give up: the idle limit
// counted from the last activity, or the end of the connection's time.
func (l *limits) deadline(cap time.Time) time.Time {
	d := time.Unix(0, l.last.Load()).Add(l.idle)
	if l.end.Before(d) {
		d = l.end
	}
	if !cap.IsZero() && cap.Before(d) {
		d = cap
	}
	return d
}

// expired says, after a timeout, whether the connection is really over
// (true) or the other direction was active meanwhile (false: wait on).
func (l *limits) expired(cap time.Time) bool {
	now := time.Now()
	switch {
	case !cap.IsZero() && !now.Before(cap):
		l.setCut("the request head or TLS ClientHello took too long")
	case !now.Before(l.end):
		l.setCut("the connection reached its maximum duration")
	case now.Sub(time.Unix(0, l.last.Load())) >= l.idle:
		l.setCut("the connection was idle too long")
	default:
		return false
	}
	return true
}

// meteredConn applies limits to a connection: every read and write gets a
// deadline, and when count is set the bytes are charged to the budget.
type meteredConn struct {
	net.Conn
	l     *limits
	count bool
	head  atomic.Int64 // UnixNano: while set, reads must finish before it
}

func (c *meteredConn) capTime() time.Time {
	if h := c.head.Load(); h != 0 {
		return time.Unix(0, h)
	}
	return time.Time{}
}

func (c *meteredConn) charge(n int) (int, bool) {
	if !c.count || n == 0 {
		return n, true
	}
	used := c.l.used.Add(int64(n))
	if used <= c.l.maxBytes {
		return n, true
	}
	c.l.setCut("the connection reached its byte limit")
	over := int(used - c.l.maxBytes)
	if over > n {
		over = n
	}
	return n - over, false
}

func (c *meteredConn) Read(b []byte) (int, error) {
	for {
		if c.l.cutReason() != "" {
			return 0, errLimit
		}
		cap := c.capTime()
		if err := c.Conn.SetReadDeadline(c.l.deadline(cap)); err != nil {
			return 0, err
		}
		n, err := c.Conn.Read(b)
		if n > 0 {
			c.l.touch()
			var ok bool
			if n, ok = c.charge(n); !ok {
				return n, errLimit
			}
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			if n > 0 {
				return n, nil
			}
			if c.l.expired(cap) {
				return 0, errLimit
			}
			continue
		}
		return n, err
	}
}

func (c *meteredConn) Write(b []byte) (int, error) {
	if c.l.cutReason() != "" {
		return 0, errLimit
	}
	allowed, ok := c.charge(len(b))
	written := 0
	for written < allowed {
		if err := c.Conn.SetWriteDeadline(c.l.deadline(time.Time{})); err != nil {
			return written, err
		}
		n, err := c.Conn.Write(b[written:allowed])
		written += n
		if n > 0 {
			c.l.touch()
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			if c.l.expired(time.Time{}) {
				return written, errLimit
			}
			continue
		}
		if err != nil {
			return written, err
		}
	}
	if !ok {
		return written, errLimit
	}
	return written, nil
}

// CloseWrite half-closes the connection when it can (TCP, Unix sockets).
func (c *meteredConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}
