// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package json

import (
	"fmt"
	"strings"
	"testing"
)

// PATCH(toolgate): patch 33. Value over an array of 1,000 strings: short
// names that are none of the common strings (a listing's, "file-00042.txt"),
// which patch 33 must not make dearer, and common ones, which it reads
// without an allocation. It uses the Plain API only, so the same file
// measures the SDK before the patch.
func BenchmarkPlainStrings(b *testing.B) {
	var miss, hit strings.Builder
	miss.WriteByte('[')
	hit.WriteByte('[')
	names := []string{"name", "type", "text", "2.0", "content", "isError", "tools/call", "2026-07-28"}
	for i := range 1000 {
		if i > 0 {
			miss.WriteByte(',')
			hit.WriteByte(',')
		}
		fmt.Fprintf(&miss, `"file-%05d.txt"`, i)
		fmt.Fprintf(&hit, `%q`, names[i%len(names)])
	}
	miss.WriteByte(']')
	hit.WriteByte(']')
	for _, bm := range []struct {
		name string
		data []byte
	}{{"other", []byte(miss.String())}, {"common", []byte(hit.String())}} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bm.data)))
			for b.Loop() {
				p := NewPlain(bm.data)
				if v, ok := p.Value(0); !ok || len(v.([]any)) != 1000 {
					b.Fatal("not read")
				}
			}
		})
	}
}
