// Copyright 2025 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

// Package json provides internal JSON utilities.

package json

import (
	"bytes"
	"fmt"
	"io"

	"github.com/segmentio/encoding/json"
)

// defaultMaxDepth is the maximum JSON nesting depth accepted by [Unmarshal].
// Realistic MCP payloads nest only a handful of levels, so 1000 is far more
// than any legitimate message requires while keeping worst-case parse cost
// bounded.
const defaultMaxDepth = 1000

// errMaxDepthExceeded is returned by [Unmarshal] when the input nests deeper than [defaultMaxDepth].
var errMaxDepthExceeded = fmt.Errorf("json: exceeded maximum nesting depth of %d", defaultMaxDepth)

type Decoder struct {
	dec *json.Decoder
}

func NewDecoder(r io.Reader) *Decoder {
	dec := json.NewDecoder(r)
	dec.DontMatchCaseInsensitiveStructFields()
	return &Decoder{dec: dec}
}

func (d *Decoder) Decode(v any) error {
	return d.dec.Decode(v)
}

func Unmarshal(data []byte, v any) error {
	// PATCH(toolgate): a PlainUnmarshaler that decodes the value (the
	// white space around it left out) has checked it (patch 11).
	if u, ok := v.(PlainUnmarshaler); ok && u.UnmarshalPlainJSON(bytes.Trim(data, " \t\r\n")) {
		return nil
	}
	if err := checkMaxDepth(data, defaultMaxDepth); err != nil {
		return err
	}
	// PATCH(toolgate): when data is exactly one JSON value between optional
	// whitespace (every well-formed message), parse it in place: a Decoder
	// would parse the same value bytes with the same flags, after allocating
	// a 32 KiB read buffer for each call. Anything else (empty input,
	// trailing data, a syntax error) takes the Decoder as before, so results
	// and errors are unchanged. See PATCHES.md.
	if json.Valid(data) {
		data = bytes.Trim(data, " \t\r\n")
		// PATCH(toolgate): a ValidUnmarshaler is given the value bytes the
		// parse would give its UnmarshalJSON, and parses them without
		// checking them again (patch 8).
		if u, ok := v.(ValidUnmarshaler); ok && string(data) != "null" {
			return u.UnmarshalValidJSON(data)
		}
		return ParseValid(data, v)
	}
	return NewDecoder(bytes.NewReader(data)).Decode(v)
}

// PATCH(toolgate): a ValidUnmarshaler decodes a value that Unmarshal has
// checked (valid, within the depth limit) as its UnmarshalJSON would, without
// checking it again (patch 8).
type ValidUnmarshaler interface {
	UnmarshalValidJSON(data []byte) error
}

// PATCH(toolgate): a PlainUnmarshaler decodes, in one pass that checks
// them, the values it knows, and reports whether it did; it leaves itself
// as it is when it did not. A value it decodes must be one Unmarshal finds
// valid and within its depth limit, decoded as Unmarshal would decode it
// (patch 11).
type PlainUnmarshaler interface {
	UnmarshalPlainJSON(data []byte) bool
}

// PATCH(toolgate): a KeptUnmarshaler decodes data as UnmarshalPlainJSON
// would (PlainUnmarshaler), and reports whether it did, when data is its
// to keep: nothing else holds or changes the bytes, and their capacity ends
// at their end (an append copies them). It may keep them rather than copy
// them (patch 29). Patch 39: with ascii set, data lies in a value a Plain's
// Skip read whole and found all ASCII (Plain.ASCII), which it may read
// with NewASCIIPlain.
type KeptUnmarshaler interface {
	UnmarshalKeptJSON(data []byte, ascii bool) bool
}

// PATCH(toolgate): ParseValid parses data, a value Unmarshal has checked, into
// v: what Unmarshal does after its checks (patch 8).
func ParseValid(data []byte, v any) error {
	_, err := json.Parse(bytes.Trim(data, " \t\r\n"), v, json.DontMatchCaseInsensitiveStructFields)
	return err
}

// checkMaxDepth scans data once and reports [errMaxDepthExceeded] if the
// nesting of JSON objects and arrays exceeds maxDepth. It is a lightweight pass which
// tracks '{' and '[' against '}' and ']' while skipping over the contents of strings.
//
// PATCH(toolgate): it finds a string's closing quote with bytes.IndexByte
// instead of looking at every byte of it (patch 10): a quote closes the
// string when an even number of backslashes comes right before it (each
// pair is one escaped backslash; an odd one escapes the quote).
// checkMaxDepthV180 in patch_test.go is the loop it replaces.
func checkMaxDepth(data []byte, maxDepth int) error {
	depth := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			for {
				j := bytes.IndexByte(data[i+1:], '"')
				if j < 0 {
					return nil // an unterminated string: nothing after it counts
				}
				i += 1 + j
				k := 0 // backslashes right before the quote; the opening quote stops the count
				for data[i-1-k] == '\\' {
					k++
				}
				if k%2 == 0 {
					break
				}
			}
		case '{', '[':
			depth++
			if depth > maxDepth {
				return errMaxDepthExceeded
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}
