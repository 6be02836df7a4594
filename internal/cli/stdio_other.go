//go:build !linux

package cli

import "os"

// pollable returns nil: only Linux opens a pipe again as a new open file
// description (/proc/self/fd), so elsewhere standard input stays as it is.
func pollable(*os.File) *os.File { return nil }
