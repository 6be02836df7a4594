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
	era      int  // ResetForTest calls: a Widen's done from an earlier era does nothing
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
	at := era
	return sync.OnceFunc(func() {
		mu.Lock()
		defer mu.Unlock()
		if era != at {
			return // ResetForTest forgot this Widen
		}
		wide--
		if wide == 0 {
			runtime.GOMAXPROCS(1)
		}
	})
}

// ResetForTest undoes [Narrow] and forgets every [Widen] not yet done (their
// done then does nothing), and gives the process Go's default GOMAXPROCS
// (runtime.SetDefaultGOMAXPROCS: the environment's GOMAXPROCS, else the
// processors it may use). For tests only: the tests of a package share the
// process's setting, and one that narrows the process itself starts from
// this, whatever an earlier test left (a Demand's Widen held after a burst
// that ended within its Calm, say).
func ResetForTest() {
	mu.Lock()
	defer mu.Unlock()
	narrowed, wide, all = false, 0, 0
	era++
	runtime.SetDefaultGOMAXPROCS()
}
