package procs

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// procsNow is the process's processors now.
func procsNow() int { return runtime.GOMAXPROCS(0) }

func TestDemandOneAtATimeStaysNarrow(t *testing.T) {
	narrow(t)
	d := &Demand{}
	for range 100 {
		d.Begin()
		if got := procsNow(); got != 1 {
			t.Fatalf("one request running: %d processors, want 1", got)
		}
		d.End()
	}
}

func TestDemandWidensWhileRequestsOverlap(t *testing.T) {
	def := narrow(t)
	d := &Demand{Calm: time.Hour}
	d.Begin()
	d.Begin()
	if got := procsNow(); got != def {
		t.Fatalf("two requests running: %d processors, want %d", got, def)
	}
	d.End()
	d.End()
	if got := procsNow(); got != def {
		t.Fatalf("ended before Calm passed: %d processors, want %d until it has", got, def)
	}
	d.Calm = 0
	d.Begin()
	if got := procsNow(); got != def {
		t.Fatalf("one request after Calm: %d processors, want %d until a request ends", got, def)
	}
	d.End()
	if got := procsNow(); got != 1 {
		t.Fatalf("Calm passed and a request ended alone: %d processors, want 1", got)
	}
}

func TestDemandNarrowsWithOneStillRunning(t *testing.T) {
	def := narrow(t)
	d := &Demand{}
	d.Begin()
	d.Begin()
	d.Begin()
	d.End() // two still running
	if got := procsNow(); got != def {
		t.Fatalf("two of three still running: %d processors, want %d", got, def)
	}
	d.End() // one still running (a long call): narrow
	if got := procsNow(); got != 1 {
		t.Fatalf("one of three still running: %d processors, want 1", got)
	}
	d.End()
}

// A search's Widen and a Demand's overlap each hold the processors: the
// process narrows when both are done.
func TestDemandAndWiden(t *testing.T) {
	def := narrow(t)
	d := &Demand{}
	search := Widen()
	d.Begin()
	d.Begin()
	d.End()
	d.End()
	if got := procsNow(); got != def {
		t.Fatalf("requests no longer overlap, a search still runs: %d processors, want %d", got, def)
	}
	search()
	if got := procsNow(); got != 1 {
		t.Fatalf("all done: %d processors, want 1", got)
	}
}

func TestDemandConcurrently(t *testing.T) {
	narrow(t)
	d := &Demand{}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 200 {
				d.Begin()
				runtime.Gosched()
				d.End()
			}
		})
	}
	wg.Wait()
	d.Begin() // alone, Calm 0: ends narrow whatever came before
	d.End()
	if got := procsNow(); got != 1 {
		t.Fatalf("after the overlapping requests, one alone: %d processors, want 1", got)
	}
	mu.Lock()
	n := wide
	mu.Unlock()
	if n != 0 || d.running.Load() != 0 {
		t.Fatalf("%d Widens held, %d requests counted after all ended", n, d.running.Load())
	}
}
