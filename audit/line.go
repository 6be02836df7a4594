package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"hash"
)

// Every record line ends with this layout: the two hash members, in this
// order, each 64 lowercase hex digits.
const (
	prevKey   = `,"prev_hash":"`
	hashKey   = `","hash":"`
	suffixLen = len(prevKey) + 64 + len(hashKey) + 64 + len(`"}`)
)

// lineStatus is what checkLine found.
type lineStatus int

const (
	lineNotRecord lineStatus = iota // no hash members at the end: not a record
	lineModified                    // the hash does not match the content
	lineNotJSON                     // the hash matches but the line is not a JSON object
	lineOK
)

// lineChecker checks record lines; it reuses one SHA-256 state.
type lineChecker struct {
	d   hash.Hash
	sum [32]byte
}

func newLineChecker() *lineChecker { return &lineChecker{d: sha256.New()} }

// check reads a line (without its newline) as a record and returns its
// prev_hash and hash members and whether the hash matches the content.
func (c *lineChecker) check(line []byte) (prev, self [32]byte, st lineStatus) {
	n := len(line)
	if n < suffixLen+1 || line[0] != '{' || line[n-1] != '}' || line[n-2] != '"' {
		return prev, self, lineNotRecord
	}
	s := line[n-suffixLen:]
	if string(s[:len(prevKey)]) != prevKey || string(s[len(prevKey)+64:len(prevKey)+64+len(hashKey)]) != hashKey {
		return prev, self, lineNotRecord
	}
	if !decodeHex(&prev, s[len(prevKey):len(prevKey)+64]) || !decodeHex(&self, s[len(s)-66:len(s)-2]) {
		return prev, self, lineNotRecord
	}
	c.d.Reset()
	c.d.Write(line[:n-66])
	c.d.Write(line[n-2:])
	c.d.Sum(c.sum[:0])
	if c.sum != self {
		return prev, self, lineModified
	}
	if !json.Valid(line) {
		return prev, self, lineNotJSON
	}
	return prev, self, lineOK
}

// decodeHex decodes 64 lowercase hex digits into dst.
func decodeHex(dst *[32]byte, s []byte) bool {
	for i := range dst {
		hi, ok1 := hexVal(s[2*i])
		lo, ok2 := hexVal(s[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func hexVal(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// looksTorn reports whether a line that is not a record could be the start
// of one whose write was cut short.
func looksTorn(line []byte) bool {
	const start = `{"time":"`
	if len(line) <= len(start) {
		return len(line) > 0 && bytes.HasPrefix([]byte(start), line)
	}
	return bytes.HasPrefix(line, []byte(start))
}
