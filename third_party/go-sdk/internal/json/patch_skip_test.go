// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package json

import (
	"strings"
	"testing"
)

// PATCH(toolgate): patch 40. skipString finds a string's quote and
// backslashes with bytes.IndexByte and checks its runs with runBits: it
// reads what it read byte by byte (skipStringBytewise, patch 11's, which
// patches 11-13's tests compare with v1.8.0's) on strings longer than
// TestStringScans's, whose runs between escapes are long (up to 300 bytes,
// more than one vector of IndexByte), with escaped quotes (the quote found
// first is not the end), and with a byte each run may hold or that ends
// one put at every place of the second and last runs.
func TestSkipStringLongRuns(t *testing.T) {
	specials := []string{`"`, `\\`, `\"`, `\n`, `\u00e9`, `\u12`, `\x`, `\`, "\x00", "\x1f", "\x20", "\x7f", "\x80", "\xc3\xa9", "\xff"}
	for _, n := range []int{7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 300} {
		run := strings.Repeat("line of a file ", n)[:n]
		for _, esc := range []string{`\n`, `\"`, `\\`, `\u00e9`, `\/`} {
			body := run + esc + run + esc + run
			for k := len(run) + len(esc); k <= len(body); k++ {
				for _, s := range specials {
					b := body[:k] + s + body[k:]
					for _, data := range []string{`"` + b + `"`, `"` + b + `"` + b, `"` + b, `"` + b + `\"`} {
						checkScans(t, []byte(data))
					}
				}
			}
		}
	}
}
