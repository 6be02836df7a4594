package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tool"
)

// TestWorkersRetire: a burst of concurrent calls starts a worker each;
// once calls stop, the idle workers go (half at a look while calls still
// come, all at a look after none came), and calls made after that start
// workers again.
func TestWorkersRetire(t *testing.T) {
	release := make(chan struct{})
	reg := registry.New()
	reg.Register(tool.New("wait", "Waits for the test.", func(ctx context.Context, in struct {
		Wait bool `json:"wait,omitempty"`
	}) (string, error) {
		if in.Wait {
			<-release
		}
		return "ok", nil
	}, tool.ReadOnly()))
	e := New(Options{Registry: reg})
	e.workers.every = 20 * time.Millisecond
	const burst = 16
	var wg sync.WaitGroup
	for range burst {
		wg.Go(func() {
			if res := e.Execute(context.Background(), tool.Call{Name: "wait", Args: []byte(`{"wait":true}`)}); res.IsError() {
				t.Error(res.Text())
			}
		})
	}
	for e.workers.alive.Load() < burst {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	// Calls keep coming, one at a time: the pool shrinks but still runs them.
	for e.workers.alive.Load() > burst/2 {
		if res := e.Execute(context.Background(), tool.Call{Name: "wait", Args: []byte(`{}`)}); res.IsError() {
			t.Fatal(res.Text())
		}
		time.Sleep(time.Millisecond)
	}
	// No calls: every worker goes, and the look stops.
	for e.workers.alive.Load() > 0 {
		time.Sleep(time.Millisecond)
	}
	for {
		e.workers.mu.Lock()
		armed := e.workers.armed
		e.workers.mu.Unlock()
		if !armed {
			break
		}
		time.Sleep(time.Millisecond)
	}
	for range 3 {
		if res := e.Execute(context.Background(), tool.Call{Name: "wait", Args: []byte(`{}`)}); res.IsError() {
			t.Fatal(res.Text())
		}
	}
	if n := e.workers.alive.Load(); n != 1 {
		t.Errorf("%d workers for calls one after the other, want 1", n)
	}
}
