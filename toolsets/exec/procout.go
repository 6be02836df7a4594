package exec

import (
	"os"
	"path/filepath"
	"sync"
)

// procOutput is the output of one process: one stream (stdout and stderr
// interleaved as they came), addressed by byte offsets into everything the
// process ever wrote. The last memKeep bytes are in memory; once more has
// come, the stream is also kept in a file of at most fileKeep bytes (a
// ring: the byte at offset o lies at o mod fileKeep), so the last
// fileKeep bytes stay readable and what is older is dropped, counted by
// the reader that asks for it.
type procOutput struct {
	mu       sync.Mutex
	total    int64  // bytes written so far: the offset of the next byte
	mem      []byte // ring of the last memKeep bytes: offset o at o mod memKeep
	memKeep  int64
	fileKeep int64
	path     string   // the spill file, made when total first passes memKeep
	file     *os.File // nil: none (yet, or it could not be made: memory alone)
	fileErr  bool
	changed  chan struct{} // closed and replaced at each write and at close
	closed   bool
}

func newProcOutput(memKeep, fileKeep int64, path string) *procOutput {
	if fileKeep < memKeep {
		fileKeep = memKeep
	}
	return &procOutput{memKeep: memKeep, fileKeep: fileKeep, path: path, changed: make(chan struct{})}
}

// Write appends p to the stream. It never fails: what cannot be kept is
// dropped, and counted by the reader that asks for it.
func (o *procOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return len(p), nil
	}
	if o.total+int64(len(p)) > o.memKeep && o.file == nil && !o.fileErr && o.path != "" {
		o.spill()
	}
	if o.file != nil {
		ringWrite(func(b []byte, at int64) { o.file.WriteAt(b, at) }, p, o.total, o.fileKeep)
	}
	if o.mem == nil {
		o.mem = make([]byte, min(o.memKeep, 64<<10))
	}
	if int64(len(o.mem)) < o.memKeep && o.total+int64(len(p)) > int64(len(o.mem)) {
		o.grow(o.total + int64(len(p)))
	}
	ringWrite(func(b []byte, at int64) { copy(o.mem[at:], b) }, p, o.total, int64(len(o.mem)))
	o.total += int64(len(p))
	close(o.changed)
	o.changed = make(chan struct{})
	return len(p), nil
}

// grow enlarges the memory ring (while it holds the whole stream from
// offset 0) towards need bytes, at most memKeep.
func (o *procOutput) grow(need int64) {
	size := int64(len(o.mem))
	for size < need && size < o.memKeep {
		size *= 2
	}
	size = min(size, o.memKeep)
	m := make([]byte, size)
	copy(m, o.mem[:o.total]) // offsets below len(o.mem) are still in place
	o.mem = m
}

// spill makes the file and copies the memory ring into it. o.mu is held.
func (o *procOutput) spill() {
	os.MkdirAll(filepath.Dir(o.path), 0o700)
	f, err := os.OpenFile(o.path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		o.fileErr = true
		return
	}
	o.file = f
	from := max(0, o.total-int64(len(o.mem)))
	buf := make([]byte, o.total-from)
	o.copyMem(buf, from)
	ringWrite(func(b []byte, at int64) { f.WriteAt(b, at) }, buf, from, o.fileKeep)
}

// ringWrite writes p, which starts at stream offset off, into a ring of
// size bytes through write (at: the ring's index).
func ringWrite(write func(b []byte, at int64), p []byte, off, size int64) {
	if int64(len(p)) > size { // only the last size bytes stay
		off += int64(len(p)) - size
		p = p[int64(len(p))-size:]
	}
	for len(p) > 0 {
		at := off % size
		n := min(int64(len(p)), size-at)
		write(p[:n], at)
		p, off = p[n:], off+n
	}
}

// copyMem copies the bytes from offset from, which must still be in the
// memory ring, into buf. o.mu is held.
func (o *procOutput) copyMem(buf []byte, from int64) {
	size := int64(len(o.mem))
	for len(buf) > 0 {
		at := from % size
		n := copy(buf, o.mem[at:])
		buf, from = buf[n:], from+int64(n)
	}
}

// kept returns the offset of the oldest byte still readable.
func (o *procOutput) kept() int64 {
	keep := int64(len(o.mem))
	if o.file != nil {
		keep = o.fileKeep
	}
	return max(0, o.total-keep)
}

// read returns up to max bytes from offset cursor, the offset they start
// at (later than cursor when bytes were dropped), and the total so far.
// A cursor past the end reads nothing from the end. The slice is new, the
// caller's own (readOutput makes it a string in place).
func (o *procOutput) read(cursor int64, max int) (data []byte, from, total int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	cursor = min(cursor, o.total)
	from = maxI64(cursor, o.kept())
	n := min(int64(max), o.total-from)
	data = make([]byte, n)
	switch {
	case n == 0:
	case from >= o.total-int64(len(o.mem)):
		o.copyMem(data, from)
	default:
		read := 0
		for read < len(data) {
			at := (from + int64(read)) % o.fileKeep
			m, err := o.file.ReadAt(data[read:min(len(data), read+int(o.fileKeep-at))], at)
			read += m
			if err != nil && m == 0 {
				data = data[:read]
				break
			}
		}
	}
	return data, from, o.total
}

func maxI64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// size returns the bytes written so far.
func (o *procOutput) size() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.total
}

// wait returns a channel closed at the next write (or at close).
func (o *procOutput) wait() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.changed
}

// close ends the stream (later writes are dropped) and wakes the
// waiters; remove takes the file away.
func (o *procOutput) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.closed {
		o.closed = true
		close(o.changed)
		o.changed = make(chan struct{})
	}
}

func (o *procOutput) remove() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.file != nil {
		o.file.Close()
		os.Remove(o.path)
		o.file = nil
	}
	o.fileErr = true
}
