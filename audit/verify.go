package audit

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sort"
)

// Kinds of Problem that Verify reports.
const (
	KindModified   = "modified"    // the record's hash does not match its content
	KindRemoved    = "removed"     // records are missing before this line
	KindInserted   = "inserted"    // this line is not part of the chain (added, or a duplicate)
	KindReordered  = "reordered"   // this record belongs after a later line
	KindBrokenLink = "broken link" // prev_hash does not link, for no reason Verify can name
	KindTorn       = "torn"        // a write cut short by a crash (a warning)
	KindInvalid    = "invalid"     // the line is not a record
)

// Problem is one thing wrong with a log.
type Problem struct {
	Line    int    `json:"line"` // 1-based line number
	Kind    string `json:"kind"` // one of the Kind constants
	Message string `json:"message"`
	// Warning marks a problem that is not tampering: a torn line left by a
	// crash. The record being written then is lost; the rest still verifies.
	Warning bool `json:"warning,omitempty"`
}

// Report is what Verify found.
type Report struct {
	Lines   int  `json:"lines"`   // lines read
	Records int  `json:"records"` // lines that hold a record (intact or not)
	OK      bool `json:"ok"`      // no problem at all, warnings included
	// Problems in line order; the first is the first thing wrong.
	Problems []Problem `json:"problems"`
	// Omitted counts problems beyond the first maxProblems, not listed.
	Omitted int `json:"omitted,omitempty"`
	// Head is the hash of the last record of the chain (GenesisHash for a log
	// without records): keep it elsewhere to detect a truncated log later.
	Head string `json:"head"`
}

const (
	maxProblems = 1000
	window      = 1 << 16 // records remembered to explain a broken link
	maxPending  = 1024    // broken links waiting for a later line to explain them
)

// Verify reads an audit log and checks every line: that it is a record, that
// its hash matches its content, and that its prev_hash is the hash of the
// record before it (GenesisHash for the first). It names each problem with
// its line number (see the Kind constants): a broken link is explained as
// removed, inserted or reordered records when the neighbouring lines show
// which, and a line that is not a record is torn (a warning) when it looks
// like the start of a record cut short and the chain continues across it.
//
// Verify streams: memory stays bounded however long the log. The error is
// only for failing to read r; what is wrong with the log is in the Report.
func Verify(r io.Reader) (Report, error) {
	v := &verifier{
		check:    newLineChecker(),
		win:      map[[32]byte]int{},
		byTarget: map[[32]byte]int{},
		byPrev:   map[[32]byte]int{},
	}
	br := bufio.NewReaderSize(r, 32<<10)
	var long []byte
	for {
		line, err := br.ReadSlice('\n')
		tooLong := false
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				if len(long) <= maxLine {
					long = append(long, line...)
				} else {
					tooLong = true
				}
			}
			line = long
		}
		if len(line) == 0 {
			if err == nil || err == io.EOF {
				break
			}
			return v.finish(), fmt.Errorf("audit: verify: %w", err)
		}
		terminated := line[len(line)-1] == '\n'
		if terminated {
			line = line[:len(line)-1]
		}
		v.line(line, terminated, tooLong)
		if err == io.EOF {
			break
		}
		if err != nil {
			return v.finish(), fmt.Errorf("audit: verify: %w", err)
		}
	}
	return v.finish(), nil
}

type entry struct {
	line  int
	hash  [32]byte
	broke bool // its prev_hash did not link to the record before it
}

// pending is a broken link that a later line may explain.
type pending struct {
	problem    int      // index in rep.Problems
	line       int      // the record's line
	prevLine   int      // the line of the record before it (0: none)
	target     [32]byte // its prev_hash
	targetLine int      // a later record with that hash: reordered
	overLine   int      // a later record that links to prevLine: inserted
}

type badLine struct {
	line  int
	torn  bool
	extra string
}

type verifier struct {
	rep      Report
	check    *lineChecker
	lineNo   int
	ring     []entry          // the last window records, by sequence number modulo window
	win      map[[32]byte]int // hash → sequence number of a remembered record
	seq      int              // records in the chain so far
	expected [32]byte         // hash the next prev_hash must be
	broke    bool             // the last record's link was broken
	pend     []pending
	byTarget map[[32]byte]int
	byPrev   map[[32]byte]int
	bad      []badLine // lines since the last record that are not records
}

func (v *verifier) add(line int, kind, format string, args ...any) int {
	if len(v.rep.Problems) >= maxProblems {
		v.rep.Omitted++
		return -1
	}
	v.rep.Problems = append(v.rep.Problems, Problem{Line: line, Kind: kind, Message: fmt.Sprintf(format, args...), Warning: kind == KindTorn})
	return len(v.rep.Problems) - 1
}

func (v *verifier) line(line []byte, terminated, tooLong bool) {
	v.lineNo++
	n := v.lineNo
	if tooLong {
		v.add(n, KindInvalid, "line %d is longer than %d bytes: not a record", n, maxLine)
		return
	}
	prev, self, st := v.check.check(line)
	switch st {
	case lineNotRecord:
		torn := looksTorn(line)
		if !terminated {
			if torn {
				v.add(n, KindTorn, "line %d is the start of a record cut short (no newline at the end): a crash interrupted a write", n)
			} else {
				v.add(n, KindInvalid, "line %d (the last, without a newline) is not a record", n)
			}
			return
		}
		v.bad = append(v.bad, badLine{line: n, torn: torn})
		return
	case lineNotJSON:
		v.bad = append(v.bad, badLine{line: n, extra: "its hash matches but it is not a JSON object"})
		return
	}
	v.rep.Records++
	if st == lineModified {
		v.add(n, KindModified, "line %d was modified: its content does not match its hash", n)
	}
	if !terminated {
		v.add(n, KindTorn, "line %d, the last, has no newline: the write may have been cut short (the record itself is complete)", n)
	}
	if j, ok := v.win[self]; ok {
		v.flushBad(false)
		v.add(n, KindInserted, "line %d repeats the record on line %d", n, v.ring[j%window].line)
		return
	}
	if k, ok := v.byTarget[self]; ok && v.pend[k].targetLine == 0 {
		v.pend[k].targetLine = n
	}
	if k, ok := v.byPrev[prev]; ok && v.pend[k].overLine == 0 {
		v.pend[k].overLine = n
	}

	broke := prev != v.expected
	v.flushBad(broke)
	if broke && !v.broke {
		v.explain(n, prev)
	}
	v.expected = self
	v.broke = broke
	v.remember(entry{line: n, hash: self, broke: broke})
}

// explain reports the broken link of the record on line n.
func (v *verifier) explain(n int, prev [32]byte) {
	prevLine := 0
	if v.seq > 0 {
		prevLine = v.ring[(v.seq-1)%window].line
	}
	if prev == ([32]byte{}) {
		v.add(n, KindInserted, "line %d claims to be the first record (its prev_hash is the genesis hash) but follows line %d", n, prevLine)
		return
	}
	if j, ok := v.win[prev]; ok {
		next := v.ring[(j+1)%window]
		if next.broke {
			return // the disorder was reported at that line
		}
		first, last := next.line, prevLine
		if first == last {
			v.add(first, KindInserted, "line %d is not part of the chain: line %d links past it to line %d", first, n, v.ring[j%window].line)
		} else {
			v.add(first, KindInserted, "lines %d to %d are not part of the chain: line %d links past them to line %d", first, last, n, v.ring[j%window].line)
		}
		return
	}
	if len(v.pend) >= maxPending {
		v.add(n, KindBrokenLink, "line %d does not link to line %d: its prev_hash is not that record's hash", n, prevLine)
		return
	}
	p := pending{problem: v.add(n, KindBrokenLink, ""), line: n, prevLine: prevLine, target: prev}
	v.pend = append(v.pend, p)
	if _, ok := v.byTarget[prev]; !ok {
		v.byTarget[prev] = len(v.pend) - 1
	}
	if v.seq > 0 {
		if _, ok := v.byPrev[v.expected]; !ok {
			v.byPrev[v.expected] = len(v.pend) - 1
		}
	}
}

// flushBad decides what the non-record lines before a record are: torn
// writes when the chain continues across them, invalid otherwise.
func (v *verifier) flushBad(broke bool) {
	for _, b := range v.bad {
		switch {
		case b.extra != "":
			v.add(b.line, KindInvalid, "line %d is not a record: %s", b.line, b.extra)
		case b.torn && !broke:
			v.add(b.line, KindTorn, "line %d is the start of a record cut short: a crash interrupted a write and the log went on after it", b.line)
		default:
			v.add(b.line, KindInvalid, "line %d is not a record", b.line)
		}
	}
	v.bad = v.bad[:0]
}

func (v *verifier) remember(e entry) {
	slot := v.seq % window
	if v.seq >= window {
		old := v.ring[slot]
		if j, ok := v.win[old.hash]; ok && j == v.seq-window {
			delete(v.win, old.hash)
		}
	}
	if slot == len(v.ring) {
		v.ring = append(v.ring, e)
	} else {
		v.ring[slot] = e
	}
	v.win[e.hash] = v.seq
	v.seq++
}

func (v *verifier) finish() Report {
	v.flushBad(false)
	for _, p := range v.pend {
		if p.problem < 0 {
			continue
		}
		pr := &v.rep.Problems[p.problem]
		switch {
		case p.targetLine > 0:
			pr.Kind = KindReordered
			pr.Message = fmt.Sprintf("line %d is out of order: it links to line %d, which comes after it", p.line, p.targetLine)
		case p.overLine > 0:
			pr.Kind = KindInserted
			pr.Message = fmt.Sprintf("line %d is not part of the chain: line %d links past it to line %d", p.line, p.overLine, p.prevLine)
		case p.prevLine == 0:
			pr.Kind = KindRemoved
			pr.Message = fmt.Sprintf("records are missing before line %d: it is the first record but its prev_hash is not the genesis hash", p.line)
		case v.seq > window:
			pr.Message = fmt.Sprintf("line %d does not link to line %d: its prev_hash names no record nearby (records removed, or line %d rewritten)", p.line, p.prevLine, p.prevLine)
		default:
			pr.Kind = KindRemoved
			pr.Message = fmt.Sprintf("records are missing between lines %d and %d: line %d's prev_hash names no record in the log (or line %d was rewritten)", p.prevLine, p.line, p.line, p.prevLine)
		}
	}
	sort.SliceStable(v.rep.Problems, func(i, j int) bool { return v.rep.Problems[i].Line < v.rep.Problems[j].Line })
	v.rep.Lines = v.lineNo
	v.rep.OK = len(v.rep.Problems) == 0 && v.rep.Omitted == 0
	v.rep.Head = hex.EncodeToString(v.expected[:])
	if v.rep.Problems == nil {
		v.rep.Problems = []Problem{}
	}
	return v.rep
}
