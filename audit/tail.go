package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// Tail returns the last n records of a log, oldest first, reading backwards
// from the end so that a huge log is not read whole. Lines that are not
// records (a torn last line, garbage) are skipped; Tail does not check
// hashes (Verify does).
func Tail(r io.ReadSeeker, n int) ([]Record, error) {
	return TailWhile(r, n, nil)
}

// TailWhile is Tail that stops reading backwards at the first record whose
// time more rejects (that record is not returned). The time is read from the
// start of the line, so that records left out are never decoded: a program
// that wants the last minute of a busy log reads only that minute.
func TailWhile(r io.ReadSeeker, n int, more func(time.Time) bool) ([]Record, error) {
	if n <= 0 {
		return []Record{}, nil
	}
	size, err := r.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, fmt.Errorf("audit: tail: %w", err)
	}
	const chunk = 64 << 10
	var (
		out   []Record // newest first
		carry []byte   // the start of a line whose beginning is not read yet
		off   = size
	)
scan:
	for off > 0 && len(out) < n {
		k := min(int64(chunk), off)
		off -= k
		buf := make([]byte, int(k), int(k)+len(carry))
		if _, err := r.Seek(off, io.SeekStart); err != nil {
			return nil, fmt.Errorf("audit: tail: %w", err)
		}
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, fmt.Errorf("audit: tail: %w", err)
		}
		data := append(buf, carry...)
		// data[:first] may continue before off: keep it for the next round.
		first := 0
		if off > 0 {
			first = bytes.IndexByte(data, '\n') + 1
			if first == 0 {
				if len(data) > maxLine {
					return nil, fmt.Errorf("audit: tail: a line is longer than %d bytes", maxLine)
				}
				carry = data
				continue
			}
		}
		lines := data[first:]
		for len(lines) > 0 && len(out) < n {
			end := len(lines)
			if lines[end-1] == '\n' {
				end--
			}
			i := bytes.LastIndexByte(lines[:end], '\n') + 1
			line := lines[i:end]
			lines = lines[:i]
			if len(line) == 0 {
				continue
			}
			t, timed := lineTime(line)
			if more != nil && timed && !more(t) {
				break scan
			}
			var rec Record
			if json.Unmarshal(line, &rec) != nil {
				continue
			}
			if more != nil && !timed && !more(rec.Time) {
				break scan
			}
			out = append(out, rec)
		}
		carry = data[:first]
	}
	return reverse(out), nil
}

// reverse returns the records oldest first, never nil.
func reverse(out []Record) []Record {
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	if out == nil {
		out = []Record{}
	}
	return out
}

// lineTime reads the time of a record from the start of its line, where
// Record's JSON puts it; ok is false for any other line.
func lineTime(line []byte) (time.Time, bool) {
	rest, ok := bytes.CutPrefix(line, []byte(`{"time":"`))
	if !ok {
		return time.Time{}, false
	}
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(rest[:end]))
	return t, err == nil
}

// Query selects records. Empty fields match anything; set fields must all
// match.
type Query struct {
	Tool, Session, Principal, Decision, Outcome string
	Since, Until                                time.Time // Time >= Since and Time < Until, when set
	// Limit keeps only the last Limit matches (0: all).
	Limit int
}

// Match reports whether rec satisfies q.
func (q Query) Match(rec Record) bool {
	return (q.Tool == "" || rec.Tool == q.Tool) &&
		(q.Session == "" || rec.Session == q.Session) &&
		(q.Principal == "" || rec.Principal == q.Principal) &&
		(q.Decision == "" || rec.Decision == q.Decision) &&
		(q.Outcome == "" || rec.Outcome == q.Outcome) &&
		(q.Since.IsZero() || !rec.Time.Before(q.Since)) &&
		(q.Until.IsZero() || rec.Time.Before(q.Until))
}

// Select reads a log and returns the records that match q, oldest first.
// Lines that are not records are skipped; Select does not check hashes.
func Select(r io.Reader, q Query) ([]Record, error) {
	out := []Record{}
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				if len(long) <= maxLine {
					long = append(long, line...)
				}
			}
			line = long
		}
		if len(line) > 0 {
			var rec Record
			if json.Unmarshal(bytes.TrimSuffix(line, []byte{'\n'}), &rec) == nil && q.Match(rec) {
				out = append(out, rec)
				if q.Limit > 0 && len(out) > 2*q.Limit {
					out = append(out[:0], out[len(out)-q.Limit:]...)
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("audit: select: %w", err)
		}
	}
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[len(out)-q.Limit:]
	}
	return out, nil
}
