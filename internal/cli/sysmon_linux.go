package cli

import (
	"os"
	"syscall"
)

// execSelf replaces the process with a new run of its own program file
// (by its path, so that its name in ps stays the program's), the same
// arguments and env. It returns only if that failed (the file is gone:
// os.Executable then names it "… (deleted)").
func execSelf(env []string) {
	if exe, err := os.Executable(); err == nil {
		syscall.Exec(exe, os.Args, env)
	}
}
