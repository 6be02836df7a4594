//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package policy

import "os"

// isTerminal reports false: terminal approvals need a Unix terminal.
func isTerminal(*os.File) bool { return false }
