//go:build !unix

package search

import "io/fs"

// LinkCount returns 1: outside Unix (Windows, Plan 9, WebAssembly) a
// FileInfo carries no link count, so hard links are not detected there.
func LinkCount(fs.FileInfo) uint64 { return 1 }
