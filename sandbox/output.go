package sandbox

import (
	"fmt"
	"io"
	"sync"
)

// capture keeps the head and the tail of a stream: at most limit bytes in
// all, half from the start and half from the end, and counts the rest.
// When the whole of the output (of all captures sharing total) passes
// killAt, onFlood is called once.
type capture struct {
	mu    sync.Mutex
	limit int
	head  []byte
	tail  []byte // a ring of at most limit-limit/2 bytes
	start int    // index of the oldest byte in tail, once tail is full
	n     int64  // bytes written

	flood *flood
	sink  io.Writer // when set, what is written goes there, not kept
}

// flood counts the output of a command across its streams.
type flood struct {
	mu      sync.Mutex
	total   int64
	killAt  int64
	onFlood func()
	fired   bool
}

func (f *flood) add(n int) {
	f.mu.Lock()
	f.total += int64(n)
	fire := !f.fired && f.killAt > 0 && f.total > f.killAt
	if fire {
		f.fired = true
	}
	on := f.onFlood
	f.mu.Unlock()
	if fire && on != nil {
		on()
	}
}

// setLimit sets how much is kept (before anything is written).
func (c *capture) setLimit(limit int) {
	c.mu.Lock()
	c.limit = limit
	c.mu.Unlock()
}

// set arms the flood limit.
func (f *flood) set(killAt int64, onFlood func()) {
	f.mu.Lock()
	f.killAt, f.onFlood = killAt, onFlood
	f.mu.Unlock()
}

func newCapture(limit int, f *flood) *capture {
	return &capture{limit: limit, flood: f}
}

// setSink sends what is written to w from now on, nothing kept (a
// started process's streams).
func (c *capture) setSink(w io.Writer) {
	c.mu.Lock()
	c.sink = w
	c.mu.Unlock()
}

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.n += int64(len(p))
	if w := c.sink; w != nil {
		c.mu.Unlock()
		if w != io.Discard {
			w.Write(p) // a reader that went away loses the rest
		}
		return len(p), nil
	}
	headMax := c.limit / 2
	b := p
	if len(c.head) < headMax {
		k := min(headMax-len(c.head), len(b))
		c.head = append(c.head, b[:k]...)
		b = b[k:]
	}
	tailMax := c.limit - headMax
	for len(b) > 0 && tailMax > 0 {
		if len(c.tail) < tailMax {
			k := min(tailMax-len(c.tail), len(b))
			c.tail = append(c.tail, b[:k]...)
			b = b[k:]
			continue
		}
		if len(b) >= tailMax {
			copy(c.tail, b[len(b)-tailMax:])
			c.start = 0
			break
		}
		for _, x := range b {
			c.tail[c.start] = x
			c.start = (c.start + 1) % tailMax
		}
		break
	}
	c.mu.Unlock()
	if c.flood != nil {
		c.flood.add(len(p))
	}
	return len(p), nil
}

// bytes returns what was kept, with a mark where bytes were cut, and
// whether any were.
func (c *capture) bytes() ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	kept := int64(len(c.head) + len(c.tail))
	out := make([]byte, 0, kept+64)
	out = append(out, c.head...)
	if c.n > kept {
		out = append(out, fmt.Sprintf("\n[… %d bytes cut: the output was %d bytes, only the first and last %d are kept …]\n", c.n-kept, c.n, c.limit/2)...)
	}
	out = append(out, c.tail[c.start:]...)
	out = append(out, c.tail[:c.start]...)
	return out, c.n > kept
}

// written is the number of bytes written.
func (c *capture) written() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}
