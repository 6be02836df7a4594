//go:build !unix

package exec

import "io/fs"

// fileID is empty here: this system's FileInfo carries no device and
// inode (the command tools are not offered outside Linux anyway).
func fileID(fs.FileInfo) string { return "" }
