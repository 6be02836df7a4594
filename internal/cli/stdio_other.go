//go:build !linux

package cli

import "os"

// pollable returns nil: only Linux opens a pipe again as a new open file
// description (/proc/self/fd), so elsewhere standard input and output stay
// as they are.
func pollable(*os.File, bool) *os.File { return nil }
