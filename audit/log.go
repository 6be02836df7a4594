package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// Errors that Open and Append return (wrapped, with the path and what to do).
var (
	ErrSymlink      = errors.New("audit: the log path is a symbolic link")
	ErrNotRegular   = errors.New("audit: the log path is not a regular file")
	ErrInsecureMode = errors.New("audit: the log file is accessible to other users")
	ErrCorrupt      = errors.New("audit: the log does not end with a valid record")
	ErrClosed       = errors.New("audit: the log is closed")
	ErrLocked       = errors.New("audit: the log is locked by another writer")
)

// maxLine bounds the bytes read back to find one line; no record the package
// writes comes near it.
const maxLine = 64 << 20

// Options configure a Log. The zero value is ready to use.
type Options struct {
	// SyncInterval is how often a background goroutine flushes appended
	// records to stable storage (fsync), only when something was appended.
	// 0 means one second; a negative value turns the periodic sync off
	// (records are then synced on denials and by Close).
	SyncInterval time.Duration
	// SyncAlways flushes every record before Append returns, not only
	// denials. It costs a disk flush per call.
	SyncAlways bool
	// Exclusive makes this Log the file's only writer while it is open: Open
	// takes the file lock and keeps it until Close, even when another
	// process waits for it. Other processes opening the file wait for Close
	// (up to their LockTimeout). Without it a Log also keeps the lock
	// between appends, but lets go as soon as it is idle or another writer
	// waits (see the package documentation).
	Exclusive bool
	// LockTimeout bounds the wait for the file lock, which another Log
	// holds while it appends and gives up within a few milliseconds of
	// learning that this one waits (or, with Exclusive, holds until Close).
	// 0 means five seconds. When it runs out, Open or Append fails with
	// ErrLocked.
	LockTimeout time.Duration
	// RawCalls makes an append's system calls (the lock, the file's size,
	// the waiting flag, the write) raw ones, which do not tell the Go
	// scheduler (on Linux on amd64 and arm64; elsewhere it changes
	// nothing): they wake none of the runtime's threads, where each
	// ordinary one wakes its monitor (sysmon) from the sleep it takes while
	// every goroutine waits, and sets it looking every 20 µs for a while.
	// The price: a write that the kernel makes wait (dirty-page
	// throttling, a journal commit, a log on a network file system that
	// stalls) holds the goroutine's processor, and what is queued on it,
	// until it returns, and the collector's stop-the-world waits for it: the
	// whole process waits. It is for a process whose other I/O is raw too,
	// such as toolgate proxy (go-sdk reads and writes its pipes raw), which
	// then wakes only when a message comes. Flushes (fsync: on a denial,
	// with SyncAlways, and the periodic sync) stay ordinary. RawSupported
	// says whether it makes raw calls here.
	RawCalls bool
}

// RawSupported reports whether Options.RawCalls makes raw system calls on
// this platform (Linux on amd64 and arm64); elsewhere it changes nothing.
const RawSupported = rawCalls

// Log is an open audit log file. Its methods are safe for concurrent use,
// and several processes may append to the same file at once.
type Log struct {
	path string
	opts Options
	w    *os.File // O_WRONLY|O_APPEND
	r    *os.File // O_RDONLY, the same file: to read the head back
	wfd  uintptr
	rfd  uintptr

	mu     sync.Mutex
	closed bool
	held   bool        // this Log holds the file lock
	check  *time.Timer // armed when the lock is taken to be kept; lets it go once holdIdle passed without an append
	looked time.Time   // when l last looked for a waiting writer
	last   time.Time   // when l last appended
	yield  bool        // the lock was given up to a waiting writer: let it go first
	head   [64]byte    // hex hash of the last record in the file
	next   [64]byte    // hex hash of the record being written
	end    int64       // the file's size after our last append or read (-1: unknown)
	needNL bool        // the file ends in a torn line: start the next write with "\n"
	buf    []byte      // line being built
	args   []byte      // arguments being built
	second secondText  // the date and time of day of the last record's second
	failed error       // a background sync failed: fail every later append

	dirty    atomic.Bool
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

// Open opens the audit log at path for appending, creating it (mode 0600) and
// its missing parent directories (mode 0700). It refuses a path that is a
// symbolic link, is not a regular file, or is readable or writable by other
// users. It reads the last record to continue the chain: a torn last line
// (a write cut short by a crash) is left in place and the chain continues
// from the last complete record; a last complete line that is not a valid
// record is refused (ErrCorrupt) rather than chained onto.
func Open(path string, opts Options) (*Log, error) {
	if path == "" {
		return nil, errors.New("audit: empty log path")
	}
	if opts.SyncInterval == 0 {
		opts.SyncInterval = time.Second
	}
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = 5 * time.Second
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit: create the log's directory: %w", err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if err := checkMode(path, fi); err != nil {
			return nil, err
		}
	}
	w, err := openFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE)
	if err != nil {
		return nil, err
	}
	r, err := openFile(path, os.O_RDONLY)
	if err != nil {
		w.Close()
		return nil, err
	}
	l := &Log{path: path, opts: opts, w: w, r: r, wfd: w.Fd(), rfd: r.Fd(), end: -1}
	if err := l.checkSame(); err != nil {
		l.closeFiles()
		return nil, err
	}
	if err := l.acquire(true); err != nil {
		l.release()
		l.closeFiles()
		return nil, err
	}
	if opts.SyncInterval > 0 {
		l.stop, l.done = make(chan struct{}), make(chan struct{})
		go l.syncLoop(opts.SyncInterval)
	}
	return l, nil
}

func openFile(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|extraOpenFlags, 0o600)
	if err != nil {
		if isSymlinkRefusal(err) {
			return nil, fmt.Errorf("%w: %s; give the real file's path", ErrSymlink, path)
		}
		return nil, fmt.Errorf("audit: open %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err == nil {
		err = checkMode(path, fi)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func checkMode(path string, fi fs.FileInfo) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%w: %s; give the real file's path", ErrSymlink, path)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%w: %s is a %s", ErrNotRegular, path, fi.Mode().Type())
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("%w: %s has mode %04o; run chmod 600 on it", ErrInsecureMode, path, fi.Mode().Perm())
	}
	return nil
}

// checkSame makes sure both handles name one file (the path was not replaced
// between the two opens).
func (l *Log) checkSame() error {
	a, err := l.w.Stat()
	if err != nil {
		return fmt.Errorf("audit: stat %s: %w", l.path, err)
	}
	b, err := l.r.Stat()
	if err != nil {
		return fmt.Errorf("audit: stat %s: %w", l.path, err)
	}
	if !os.SameFile(a, b) {
		return fmt.Errorf("audit: %s was replaced while it was being opened; try again", l.path)
	}
	return nil
}

func (l *Log) closeFiles() {
	l.w.Close()
	l.r.Close()
}

// Path is the file the log appends to.
func (l *Log) Path() string { return l.path }

// Head is the hash of the last record this Log wrote or read (GenesisHash for
// an empty log). Another process may have appended since.
func (l *Log) Head() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.head[:])
}

// Append writes rec as the next record: it sets rec's PrevHash to the hash of
// the last record in the file and its Hash by the package's hash rule, and
// writes the line in one write(2) while holding the file's lock, so records
// from other goroutines and other processes never interleave or fork the
// chain. A record whose Decision is DecisionDeny (or every record, with
// Options.SyncAlways) is on stable storage when Append returns; others within
// Options.SyncInterval.
//
// ctx is not consulted: a record is written even for a call whose context
// was cancelled, so that the cancellation is on the record.
func (l *Log) Append(ctx context.Context, rec Record) error {
	if rec.Time.IsZero() {
		rec.Time = time.Now()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if l.failed != nil {
		return l.failed
	}
	l.args = appendArguments(l.args[:0], rec.Arguments)
	// holdIdle passed since the last append: let go right after this one
	// (whether or not the idle timer let go meanwhile).
	sparse := time.Since(l.last) >= holdIdle
	if !l.held {
		if err := l.acquire(!sparse); err != nil {
			return err
		}
	}
	err := l.appendLocked(&rec)
	if !l.opts.Exclusive {
		var uerr error
		switch {
		case !holdLock:
			uerr = l.release()
		case sparse:
			if l.check != nil {
				l.check.Stop() // armed when an earlier append took the lock to keep it
			}
			l.last = time.Now()
			uerr = l.letGo()
		default:
			uerr = l.appended()
		}
		if err == nil {
			err = uerr
		}
	}
	if err != nil {
		return err
	}
	if rec.Decision == DecisionDeny || l.opts.SyncAlways {
		if err := l.w.Sync(); err != nil {
			return fmt.Errorf("audit: sync %s: %w", l.path, err)
		}
		return nil
	}
	l.dirty.Store(true)
	return nil
}

// How a Log shares the file lock with other writers: it keeps the lock
// between appends, looks whether another writer waits (a waiting flag, see
// setWaiting) on an append when holdCheck passed since its last look, and
// lets go when one does or when holdIdle passes without an append (a
// timer armed when the lock is taken, which fires holdIdle later and, when
// an append came meanwhile, waits again for what is left of holdIdle since
// the last one: appends do not push it back, so that a busy Log touches no
// timer on an append and wakes for it at most once every holdIdle). An
// append that came holdIdle or more after the one before takes the lock
// without arming the timer and lets go as it ends: a Log appending less
// often than every holdIdle would otherwise wake a thread between every two
// appends only to let go. A timer that is reset and stopped is no cheaper:
// the runtime still wakes when it was due (a stopped timer stays in its
// heap until then), which was one wake-up of an idle gateway per call.
// holdIdle is long beside the kernel's tick on purpose: while a timer is
// due within a tick, every sleep of the process (the runtime's epoll_pwait
// with that timeout) arms and cancels a high-resolution timer of its own,
// which on a virtual machine is a trap to the hypervisor each way
// (measured: 12-17 µs to go to sleep and as long to wake with the 1 ms timer
// pending, 4 and 3 µs without, twice a relayed call); a timer due in
// holdIdle is within a tick for tick/holdIdle of the time (8 % at 250 Hz).
// What it costs: a writer waiting for the lock while this one is idle
// waits up to holdIdle for it.
// A writer waiting for the lock tries it again at least every pollMax; one
// that let go for a waiting writer gives it up to yieldWait to take the
// lock first.
const (
	holdCheck = time.Millisecond
	pollMax   = time.Millisecond
	yieldWait = 20 * time.Millisecond
)

// holdIdle is how long the idle timer waits without an append (a variable
// so a test can make the look on append the only way a busy writer lets
// go).
var holdIdle = 50 * time.Millisecond

// acquire takes the file lock for l (the caller holds l.mu) and reads the
// head back when the file changed since l last wrote or read it; with keep,
// the lock is to be kept after the append: it arms the idle timer.
func (l *Log) acquire(keep bool) error {
	if l.yield {
		l.yield = false
		for end := time.Now().Add(yieldWait); time.Now().Before(end); {
			if w, err := othersWaiting(l.rfd, l.opts.RawCalls); err != nil || !w {
				break
			}
			time.Sleep(pollMax / 4)
		}
	}
	if err := l.lock(); err != nil {
		return err
	}
	l.held = true
	size, err := fileSize(l.wfd, l.opts.RawCalls)
	switch {
	case err != nil:
		err = fmt.Errorf("audit: stat %s: %w", l.path, err)
	case size != l.end:
		// Another process appended (or our last write failed): read the
		// current head back before chaining onto it.
		err = l.readHead(size)
	}
	if err != nil {
		l.release()
		return err
	}
	if keep && holdLock && !l.opts.Exclusive {
		l.looked = time.Now()
		l.last = l.looked
		if l.check == nil {
			l.check = time.AfterFunc(holdIdle, l.checkHold)
		} else {
			l.check.Reset(holdIdle)
		}
	}
	return nil
}

// lock takes the file lock, waiting up to Options.LockTimeout with its
// waiting flag raised.
func (l *Log) lock() error {
	busy, err := tryLockFile(l.wfd, l.opts.RawCalls)
	if err == nil && busy {
		if setWaiting(l.rfd, l.opts.RawCalls, true) == nil { // a hint only: without it the holder lets go when idle
			defer setWaiting(l.rfd, l.opts.RawCalls, false)
		}
		deadline := time.Now().Add(l.opts.LockTimeout)
		for wait := 20 * time.Microsecond; busy && err == nil; wait = min(2*wait, pollMax) {
			if time.Now().After(deadline) {
				return fmt.Errorf("%w: %s: waited %s; is another process holding it open with Options.Exclusive?",
					ErrLocked, l.path, l.opts.LockTimeout)
			}
			time.Sleep(wait)
			busy, err = tryLockFile(l.wfd, l.opts.RawCalls)
		}
	}
	if err != nil {
		return fmt.Errorf("audit: lock %s: %w", l.path, err)
	}
	return nil
}

// release lets the file lock go (the caller holds l.mu).
func (l *Log) release() error {
	if !l.held {
		return nil
	}
	l.held = false
	if err := unlockFile(l.wfd, l.opts.RawCalls); err != nil {
		return fmt.Errorf("audit: unlock %s: %w", l.path, err)
	}
	return nil
}

// appended follows an append while l holds the lock (the caller holds
// l.mu): it notes the time for the idle timer and, when holdCheck passed
// since the last look, looks whether another writer waits and if so lets
// go.
func (l *Log) appended() error {
	now := time.Now()
	l.last = now
	if now.Sub(l.looked) < holdCheck {
		return nil
	}
	l.looked = now
	waiting, err := othersWaiting(l.rfd, l.opts.RawCalls)
	if !waiting && err == nil {
		return nil
	}
	l.yield = waiting
	return l.release()
}

// checkHold runs once holdIdle passed without an append while l holds the
// lock: it lets the lock go (for a waiting writer first, when one waits).
func (l *Log) checkHold() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.held || l.closed {
		return
	}
	if d := holdIdle - time.Since(l.last); d > 0 { // appended since it was armed: wait for the rest
		l.check.Reset(d)
		return
	}
	if err := l.letGo(); err != nil && l.failed == nil {
		l.failed = err
	}
}

// letGo lets the lock go as an idle Log does, for a waiting writer first
// when one waits (the caller holds l.mu).
func (l *Log) letGo() error {
	l.yield, _ = othersWaiting(l.rfd, l.opts.RawCalls) // it lets go either way
	return l.release()
}

// appendLocked builds and writes the line; the caller holds l.mu and the
// file lock.
func (l *Log) appendLocked(rec *Record) error {
	if l.end < 0 { // our last write failed
		size, err := fileSize(l.wfd, l.opts.RawCalls)
		if err != nil {
			return fmt.Errorf("audit: stat %s: %w", l.path, err)
		}
		if err := l.readHead(size); err != nil {
			return err
		}
	}
	b := append(l.buf[:0], '\n')
	b = appendFields(b, rec, l.args, &l.second)
	b = append(b, '"')
	b = append(b, l.head[:]...) // hex digits: nothing to escape
	b = append(b, `","hash":""}`...)
	sum := sha256.Sum256(b[1:])
	b = appendHex(b[:len(b)-2], &sum)
	copy(l.next[:], b[len(b)-64:])
	b = append(b, '"', '}', '\n')
	l.buf = b
	if !l.needNL {
		b = b[1:]
	}
	n, err := l.write(b)
	if err != nil {
		l.end = -1
		return fmt.Errorf("audit: write %s: %w", l.path, err)
	}
	l.end += int64(n)
	l.needNL = false
	l.head = l.next
	return nil
}

// write writes b to the file whole, raw with Options.RawCalls.
func (l *Log) write(b []byte) (int, error) {
	if l.opts.RawCalls {
		return rawWrite(l.wfd, b)
	}
	return l.w.Write(b)
}

// readHead sets head and needNL from the end of a file of the given size.
func (l *Log) readHead(size int64) error {
	final, last, hasLast, err := readLastLines(l.r, size)
	if err != nil {
		return fmt.Errorf("audit: read %s: %w", l.path, err)
	}
	c := newLineChecker()
	l.needNL = false
	if len(final) > 0 {
		// The file does not end with a newline: a write was cut short.
		l.needNL = true
		if _, self, st := c.check(final); st == lineOK {
			hex.Encode(l.head[:], self[:])
			l.end = size
			return nil
		}
	}
	switch {
	case !hasLast:
		copy(l.head[:], GenesisHash)
	default:
		_, self, st := c.check(last)
		if st != lineOK {
			return fmt.Errorf("%w: %s: its last complete line is not an intact record; "+
				"run `toolgate audit verify` on it and move it aside to start a new log", ErrCorrupt, l.path)
		}
		hex.Encode(l.head[:], self[:])
	}
	l.end = size
	return nil
}

// readLastLines reads the end of a file of the given size: final is what
// follows the last newline (empty when the file ends with one), last the
// last complete line before it (without its newline), hasLast whether there
// is one.
func readLastLines(r io.ReaderAt, size int64) (final, last []byte, hasLast bool, err error) {
	const chunk = 64 << 10
	var data []byte
	off := size
	for off > 0 && bytes.Count(data, []byte{'\n'}) < 2 {
		if len(data) > 2*maxLine {
			return nil, nil, false, fmt.Errorf("the last lines are longer than %d bytes", maxLine)
		}
		n := min(int64(chunk), off)
		off -= n
		buf := make([]byte, int(n), int(n)+len(data))
		if _, err := r.ReadAt(buf, off); err != nil {
			return nil, nil, false, err
		}
		data = append(buf, data...)
	}
	i := bytes.LastIndexByte(data, '\n')
	final, data = data[i+1:], data[:i+1]
	if len(data) == 0 {
		return final, nil, false, nil
	}
	data = data[:len(data)-1]
	return final, data[bytes.LastIndexByte(data, '\n')+1:], true, nil
}

// syncLoop flushes the file every interval when something was appended.
func (l *Log) syncLoop(interval time.Duration) {
	defer close(l.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			if l.dirty.Swap(false) {
				if err := l.w.Sync(); err != nil {
					l.mu.Lock()
					if l.failed == nil {
						l.failed = fmt.Errorf("audit: sync %s: %w", l.path, err)
					}
					l.mu.Unlock()
				}
			}
		}
	}
}

// Close flushes the log to stable storage and closes it. It returns an
// error from that flush, or from an earlier background flush.
func (l *Log) Close() error {
	l.stopOnce.Do(func() {
		if l.stop != nil {
			close(l.stop)
			<-l.done
		}
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	if l.check != nil {
		l.check.Stop()
	}
	l.release()
	err := l.w.Sync()
	if err != nil {
		err = fmt.Errorf("audit: sync %s: %w", l.path, err)
	} else {
		err = l.failed
	}
	l.closeFiles()
	return err
}
