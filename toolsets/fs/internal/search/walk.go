package search

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unicode/utf8"

	"github.com/toolgate/toolgate/toolsets/fs/internal/ignore"
)

// fileResult is what one file gave.
type fileResult struct {
	path    string
	link    bool    // reached through a symlink
	count   int     // matching lines
	matches []Match // the matching lines, if kept (see keepBudget)
	kept    bool
}

type jobKind uint8

const (
	jobDir  jobKind = iota // a folder to list
	jobFile                // a regular file to search, opened through its folder
	jobLink                // a symlink, opened through the root (never followed to a folder)
)

// entry is a folder entry: its name and type (0 for a regular file,
// fs.ModeDir, fs.ModeSymlink, or fs.ModeIrregular for anything else).
type entry struct {
	name string
	typ  fs.FileMode
}

// readStatus says what became of reading a file.
type readStatus uint8

const (
	readOK         readStatus = iota
	readIrregular             // not a regular file: skipped
	readTooLarge              // over MaxFileSize
	readFailed                // could not be opened or read
	readHardLinked            // has other hard links (Options.HardLinks is off)
)

type job struct {
	parent *dir   // the folder holding the entry (jobDir, jobFile)
	name   string // the entry's name in parent
	rel    string // slash path relative to the root
	kind   jobKind
	m      *ignore.Matcher // jobDir: the rules that apply in the parent
	depth  int
}

// queue is a LIFO of jobs (so the walk goes depth first and keeps few
// folders open) that knows when all work is done.
type queue struct {
	mu      sync.Mutex
	cond    sync.Cond
	jobs    []job
	pending int // queued or running
}

func (q *queue) push(js []job) {
	if len(js) == 0 {
		return
	}
	q.mu.Lock()
	q.jobs = append(q.jobs, js...)
	q.pending += len(js)
	q.mu.Unlock()
	q.cond.Broadcast()
}

func (q *queue) pop() (job, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.jobs) == 0 {
		if q.pending == 0 {
			return job{}, false
		}
		q.cond.Wait()
	}
	n := len(q.jobs) - 1
	j := q.jobs[n]
	q.jobs[n] = job{}
	q.jobs = q.jobs[:n]
	return j, true
}

func (q *queue) done() {
	q.mu.Lock()
	q.pending--
	last := q.pending == 0
	q.mu.Unlock()
	if last {
		q.cond.Broadcast()
	}
}

// worker is one goroutine's state: a reusable read buffer and what it found.
type worker struct {
	s        *searcher
	ctx      context.Context
	q        *queue
	kept     *atomic.Int64 // bytes of match text kept, shared
	buf      []byte
	scratch  []byte // for listing folders
	children []job
	found    []fileResult
	pending  fileResult // the result of the file just scanned
	skipped  Skipped
	scanned  int
}

func (s *searcher) newWorker(ctx context.Context, q *queue, kept *atomic.Int64) *worker {
	return &worker{s: s, ctx: ctx, q: q, kept: kept}
}

// walk searches the folder start with a pool of workers.
func (s *searcher) walk(ctx context.Context, start string) ([]fileResult, Skipped, int, error) {
	s.start = start
	name := start
	if name == "" {
		name = "."
	}
	top, err := openTop(s.root, name)
	if err != nil {
		return nil, Skipped{}, 0, fmt.Errorf("search %s: %w", name, err)
	}
	q := &queue{}
	q.cond.L = &q.mu
	top.refs.Add(1) // the folder itself is listed as a job
	q.push([]job{{parent: top, rel: start, kind: jobDir, m: s.ancestors(start), depth: -1}})
	top.release()
	var kept atomic.Int64
	workers := make([]*worker, s.opts.Workers)
	var wg sync.WaitGroup
	for i := range workers {
		w := s.newWorker(ctx, q, &kept)
		workers[i] = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				j, ok := q.pop()
				if !ok {
					return
				}
				w.do(j)
				q.done()
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, Skipped{}, 0, err
	}
	var found []fileResult
	var skipped Skipped
	scanned := 0
	for _, w := range workers {
		found = append(found, w.found...)
		skipped.Binary += w.skipped.Binary
		skipped.TooLarge += w.skipped.TooLarge
		skipped.Unreadable += w.skipped.Unreadable
		skipped.HardLinked += w.skipped.HardLinked
		scanned += w.scanned
	}
	return found, skipped, scanned, nil
}

// single searches one file named directly.
func (s *searcher) single(ctx context.Context, rel string) ([]fileResult, Skipped, int, error) {
	if s.opts.Target == TargetFiles {
		name := rel[lastSlash(rel)+1:]
		if s.keepFile(rel, name) {
			return []fileResult{{path: rel}}, Skipped{}, 0, nil
		}
		return nil, Skipped{}, 0, nil
	}
	var kept atomic.Int64
	w := s.newWorker(ctx, nil, &kept)
	w.searchData(w.readPath(rel))
	w.record(rel, true)
	return w.found, w.skipped, w.scanned, ctx.Err()
}

func lastSlash(p string) int {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return i
		}
	}
	return -1
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// openFile opens name for reading without blocking, so that a FIFO put in
// place of a file after the folder was listed cannot hang the search (its
// type is checked right after).
func openFile(r *os.Root, name string) (*os.File, error) {
	return r.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

func (w *worker) do(j job) {
	if w.ctx.Err() != nil {
		if j.parent != nil {
			j.parent.release()
		}
		return
	}
	switch j.kind {
	case jobDir:
		w.listDir(j)
	case jobFile:
		data, st := j.parent.read(j.name, w)
		j.parent.release()
		w.searchData(data, st)
		w.record(j.rel, false)
	case jobLink:
		w.searchData(w.readPath(j.rel))
		w.record(j.rel, true)
	}
}

// listDir opens a folder (through its parent), reads its .gitignore and
// queues its entries.
func (w *worker) listDir(j job) {
	d := j.parent
	if j.depth >= 0 { // not the searched folder itself
		var err error
		d, err = j.parent.sub(j.name)
		j.parent.release()
		if err != nil {
			w.skipped.Unreadable++
			return
		}
	}
	defer d.release()
	entries, err := d.list(&w.scratch)
	if err != nil && len(entries) == 0 {
		w.skipped.Unreadable++
		return
	}
	s := w.s
	m := j.m
	if !s.opts.IncludeIgnored {
		for _, e := range entries {
			if e.name == ".gitignore" && e.typ == 0 {
				if data, st := d.read(".gitignore", w); st == readOK {
					m = m.Push(ignore.Parse(j.rel, data))
				}
				break
			}
		}
	}
	children := w.children[:0]
	for _, e := range entries {
		name := e.name
		if name == ".git" || !s.opts.IncludeHidden && hidden(name) || e.typ&fs.ModeIrregular != 0 {
			continue // FIFOs, sockets and devices are never opened
		}
		rel := join(j.rel, name)
		isDir := e.typ.IsDir()
		if !s.opts.IncludeIgnored && m.MatchEntry(rel, isDir) {
			continue
		}
		if isDir {
			if j.depth < maxDepth {
				d.refs.Add(1)
				children = append(children, job{parent: d, name: name, rel: rel, kind: jobDir, m: m, depth: j.depth + 1})
			}
			continue
		}
		if !s.keepFile(rel, name) {
			continue
		}
		link := e.typ&fs.ModeSymlink != 0
		if s.opts.Target == TargetFiles {
			if link {
				// Listed only if it leads to a regular file inside the root.
				if info, err := s.root.Stat(rel); err != nil || !info.Mode().IsRegular() {
					continue
				}
			}
			w.found = append(w.found, fileResult{path: rel, link: link})
			continue
		}
		if link {
			children = append(children, job{name: name, rel: rel, kind: jobLink})
		} else {
			d.refs.Add(1)
			children = append(children, job{parent: d, name: name, rel: rel, kind: jobFile})
		}
	}
	w.q.push(children)
	clear(children)
	w.children = children[:0]
}

// readPath reads the file at rel (relative to the root) through the root,
// following symlinks only where they stay inside it.
func (w *worker) readPath(rel string) ([]byte, readStatus) {
	f, err := openFile(w.s.root, rel)
	if err != nil {
		return nil, readFailed
	}
	defer f.Close()
	return w.read(f)
}

// searchData counts the outcome of a read and scans what was read; the
// result waits in w.pending for record.
func (w *worker) searchData(data []byte, st readStatus) {
	w.pending = fileResult{}
	switch st {
	case readTooLarge:
		w.skipped.TooLarge++
		return
	case readFailed:
		w.skipped.Unreadable++
		return
	case readHardLinked:
		w.skipped.HardLinked++
		return
	case readIrregular:
		return
	}
	w.scanned++
	if bytes.IndexByte(data[:min(len(data), binarySniff)], 0) >= 0 {
		w.skipped.Binary++
		return
	}
	keep := w.s.opts.Output == OutputContent && w.kept.Load() < w.s.opts.keepBudget
	w.pending = w.scan(data, keep)
}

// record files the pending result of the file at rel, if it matched.
func (w *worker) record(rel string, link bool) {
	res := w.pending
	w.pending = fileResult{}
	if res.count == 0 {
		return
	}
	res.path, res.link = rel, link
	for i := range res.matches {
		res.matches[i].Path = rel
	}
	w.found = append(w.found, res)
}

// grow returns the worker's buffer with length size, reallocated if short.
func (w *worker) grow(size int64) []byte {
	if int64(cap(w.buf)) < size {
		w.buf = make([]byte, size+size/4)
	}
	return w.buf[:size]
}

// read reads a regular file whole into the reusable buffer.
func (w *worker) read(f *os.File) ([]byte, readStatus) {
	info, err := f.Stat()
	if err != nil {
		return nil, readFailed
	}
	if !info.Mode().IsRegular() {
		return nil, readIrregular // a FIFO or device reached through a symlink or a race
	}
	if LinkCount(info) > 1 && !w.s.opts.HardLinks {
		return nil, readHardLinked
	}
	if info.Size() > w.s.opts.MaxFileSize {
		return nil, readTooLarge
	}
	buf := w.grow(info.Size())
	n, err := io.ReadFull(f, buf)
	if err != nil && err != io.ErrUnexpectedEOF {
		return nil, readFailed
	}
	return buf[:n], readOK
}

// scan finds the matching lines of data.
func (w *worker) scan(data []byte, keep bool) fileResult {
	res := fileResult{kept: keep}
	lm := w.s.lm
	pos, line, counted := 0, 1, 0
	var keptBytes int64
	for {
		start, end, ok := lm.nextLine(data, pos)
		if !ok {
			break
		}
		res.count++
		if keep {
			line += bytes.Count(data[counted:start], []byte{'\n'})
			counted = start
			m := w.match(data, start, end, line)
			keptBytes += int64(len(m.Text))
			res.matches = append(res.matches, m)
		}
		pos = end + 1
	}
	if keptBytes > 0 {
		w.kept.Add(keptBytes)
	}
	return res
}

// match builds the Match for the line data[start:end] numbered n.
func (w *worker) match(data []byte, start, end, n int) Match {
	o := w.s.opts
	text := trimCR(data[start:end])
	at := 0
	if len(text) > o.MaxLineBytes {
		at = w.s.lm.matchAt(text)
	}
	m := Match{Line: n}
	m.Text, m.Cut = cutLine(text, at, o.MaxLineBytes)
	if o.Context == 0 {
		return m
	}
	// Lines before, nearest first, then reversed.
	s := start
	for k := 0; k < o.Context && s > 0; k++ {
		prevEnd := s - 1
		prevStart := bytes.LastIndexByte(data[:prevEnd], '\n') + 1
		t, _ := cutLine(trimCR(data[prevStart:prevEnd]), 0, o.MaxLineBytes)
		m.Before = append(m.Before, Line{Number: n - k - 1, Text: t})
		s = prevStart
	}
	for i, j := 0, len(m.Before)-1; i < j; i, j = i+1, j-1 {
		m.Before[i], m.Before[j] = m.Before[j], m.Before[i]
	}
	e := end
	for k := 0; k < o.Context && e+1 < len(data); k++ {
		nextStart := e + 1
		nextEnd := len(data)
		if i := bytes.IndexByte(data[nextStart:], '\n'); i >= 0 {
			nextEnd = nextStart + i
		}
		t, _ := cutLine(trimCR(data[nextStart:nextEnd]), 0, o.MaxLineBytes)
		m.After = append(m.After, Line{Number: n + k + 1, Text: t})
		e = nextEnd
	}
	return m
}

// cutLine returns line as valid UTF-8, cut to about limit bytes around the
// byte offset at when it is longer.
func cutLine(line []byte, at, limit int) (string, bool) {
	if len(line) <= limit {
		return validString(line), false
	}
	from := 0
	if at > limit/4 {
		from = at - limit/4
	}
	to := min(from+limit, len(line))
	from = max(0, min(from, to-limit))
	// Step back to a character start (at most 3 bytes: invalid UTF-8 may
	// have no character start at all).
	for k := 0; k < utf8.UTFMax-1 && from > 0 && !utf8.RuneStart(line[from]); k++ {
		from--
	}
	for k := 0; k < utf8.UTFMax-1 && to < len(line) && !utf8.RuneStart(line[to]); k++ {
		to--
	}
	text := validString(line[from:to])
	if from > 0 {
		text = CutStart + text
	}
	return text + Cut, true
}

func validString(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return string(bytes.ToValidUTF8(b, []byte("\uFFFD")))
}
