// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package json

import (
	"math/rand/v2"
	"testing"
)

// PATCH(toolgate): patch 38. stops's one &^ x gives the bits patch 15's
// three (&^ q, &^ bs, &^ x) gave, on words of the bytes that matter next to
// each other and at random; skipString's 16-byte turn is checked against
// byte-by-byte reading by TestStringScans and FuzzStringScans.
func stopsV15(x uint64) uint64 {
	q := x ^ ('"' * lo8)
	bs := x ^ ('\\' * lo8)
	return ((q-lo8)&^q | (bs-lo8)&^bs | (x-0x20*lo8)&^x) & hi8
}

func TestStopsMatchesPatch15(t *testing.T) {
	special := []byte{0, 1, 0x1f, 0x20, 0x21, '"', '#', '[', '\\', ']', 'a', 0x7f, 0x80, 0xa2, 0xdc, 0xff}
	rng := rand.New(rand.NewPCG(3, 8))
	for i := 0; i < 1<<21; i++ {
		var x uint64
		for k := 0; k < 8; k++ {
			var c byte
			if rng.IntN(2) == 0 {
				c = special[rng.IntN(len(special))]
			} else {
				c = byte(rng.Uint32())
			}
			x |= uint64(c) << (8 * k)
		}
		if got, want := stops(x), stopsV15(x); got != want {
			t.Fatalf("stops(%#016x) = %#x, patch 15's %#x", x, got, want)
		}
	}
}
