package procs

import (
	"os"
	"runtime"
	"sync"
)

var (
	mu       sync.Mutex
	narrowed bool // Narrow was called and took effect
	wide     int  // Widen calls not yet done
	all      int  // the processors before Narrow: what Widen gives back
)

// Narrow makes the process run Go code on one processor from now on,
// except while work holds a [Widen]. It does nothing when the GOMAXPROCS
// environment variable is set.
func Narrow() {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	if !narrowed {
		narrowed, all = true, runtime.GOMAXPROCS(0)
	}
	if wide == 0 {
		runtime.GOMAXPROCS(1)
	}
}

// Widen gives the process the processors it had before [Narrow] until done is
// called (once; later calls do nothing), for work that fans out across
// goroutines. Calls may overlap: the process narrows again when the last
// is done. Without a [Narrow] it changes nothing.
func Widen() (done func()) {
	mu.Lock()
	defer mu.Unlock()
	if !narrowed {
		return func() {}
	}
	wide++
	if wide == 1 {
		runtime.GOMAXPROCS(all)
	}
	return sync.OnceFunc(func() {
		mu.Lock()
		defer mu.Unlock()
		wide--
		if wide == 0 {
			runtime.GOMAXPROCS(1)
		}
	})
}
