package procs

import (
	"runtime"
	"sync"
	"testing"
)

// reset undoes Narrow for the next test (tests of this package share the
// process's setting).
func reset(t *testing.T) {
	t.Cleanup(ResetForTest)
}

// narrow narrows the process as serve does, with GOMAXPROCS unset, and
// returns the processors it had (at least two).
func narrow(t *testing.T) (def int) {
	reset(t)
	t.Setenv("GOMAXPROCS", "")
	runtime.SetDefaultGOMAXPROCS()
	if runtime.GOMAXPROCS(0) < 2 { // on one CPU: two, or widening changes nothing
		runtime.GOMAXPROCS(2)
	}
	def = runtime.GOMAXPROCS(0)
	Narrow()
	return def
}

func TestWidenWithoutNarrowChangesNothing(t *testing.T) {
	reset(t)
	before := runtime.GOMAXPROCS(0)
	done := Widen()
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Fatalf("Widen without Narrow: GOMAXPROCS %d, want %d", got, before)
	}
	done()
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Fatalf("after done: GOMAXPROCS %d, want %d", got, before)
	}
}

func TestNarrowKeepsTheEnvironmentsChoice(t *testing.T) {
	reset(t)
	t.Setenv("GOMAXPROCS", "3")
	runtime.GOMAXPROCS(3)
	Narrow()
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Fatalf("Narrow with GOMAXPROCS=3 in the environment: %d processors, want 3", got)
	}
	done := Widen()
	defer done()
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Fatalf("Widen after a Narrow that did nothing: %d processors, want 3", got)
	}
}

func TestNarrowAndWiden(t *testing.T) {
	def := narrow(t)
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("after Narrow: %d processors, want 1", got)
	}
	a := Widen()
	if got := runtime.GOMAXPROCS(0); got != def {
		t.Fatalf("during Widen: %d processors, want the default %d", got, def)
	}
	b := Widen()
	a()
	a() // a second call of the same done does nothing
	if got := runtime.GOMAXPROCS(0); got != def {
		t.Fatalf("one of two Widens done (the first twice): %d processors, want %d", got, def)
	}
	b()
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("every Widen done: %d processors, want 1", got)
	}
	Narrow() // again: still one
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("Narrow twice: %d processors, want 1", got)
	}
}

func TestNarrowDuringWiden(t *testing.T) {
	def := narrow(t)
	done := Widen()
	Narrow() // a Narrow while work fans out waits for that work
	if got := runtime.GOMAXPROCS(0); got != def {
		t.Fatalf("Narrow during a Widen: %d processors, want %d until it is done", got, def)
	}
	done()
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("after done: %d processors, want 1", got)
	}
}

func TestWidenConcurrently(t *testing.T) {
	reset(t)
	t.Setenv("GOMAXPROCS", "")
	Narrow()
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for range 20 {
				done := Widen()
				runtime.Gosched()
				done()
			}
		})
	}
	wg.Wait()
	mu.Lock()
	n := wide
	mu.Unlock()
	if n != 0 {
		t.Fatalf("%d Widens counted after all were done", n)
	}
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("after every Widen was done: %d processors, want 1", got)
	}
}

// BenchmarkWiden is what a search pays in a narrowed process to get the
// processors and give them back (two changes of GOMAXPROCS).
func BenchmarkWiden(b *testing.B) {
	mu.Lock()
	narrowed, wide, all = true, 0, runtime.GOMAXPROCS(0)
	mu.Unlock()
	runtime.GOMAXPROCS(1)
	b.Cleanup(func() {
		mu.Lock()
		narrowed, wide = false, 0
		mu.Unlock()
		runtime.SetDefaultGOMAXPROCS()
	})
	for b.Loop() {
		Widen()()
	}
}

// TestResetForTest: after ResetForTest the process has Go's default and is
// not narrowed (a Widen changes nothing), and a Widen held across it does
// nothing when done: a Narrow after it narrows, and a Widen then widens
// and narrows again as if the earlier one had never been.
func TestResetForTest(t *testing.T) {
	def := narrow(t)
	held := Widen() // left held, as a Demand's after a burst within Calm
	if got := runtime.GOMAXPROCS(0); got != def {
		t.Fatalf("widened: %d, want %d", got, def)
	}
	ResetForTest()
	runtime.GOMAXPROCS(def) // Go's default may be one processor here: def as narrow made it
	Widen()()
	if got := runtime.GOMAXPROCS(0); got != def {
		t.Fatalf("after ResetForTest a Widen's done changed GOMAXPROCS to %d, want %d", got, def)
	}
	Narrow()
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("Narrow after ResetForTest: %d processors, want 1", got)
	}
	held() // of the era before: does nothing
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("the held Widen's done: %d processors, want 1", got)
	}
	done := Widen()
	if got := runtime.GOMAXPROCS(0); got != def {
		t.Fatalf("a Widen after: %d processors, want %d", got, def)
	}
	done()
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("its done: %d processors, want 1", got)
	}
}
