//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package policy

import "golang.org/x/sys/unix"

const ioctlGetTermios = unix.TIOCGETA
