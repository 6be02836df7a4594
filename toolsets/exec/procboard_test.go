package exec

import (
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/auth"
	"github.com/toolgate/toolgate/internal/redistest"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/store"
	"github.com/toolgate/toolgate/tool"
)

// TestProcessReplicas: two registries (replicas) over one real
// redis-server. A process started on replica a is read from replica b
// (its output, then what followed a write on a), listed there with its
// replica, not found by another owner; a write or stop through b is a
// retryable unavailable naming a. When a stops renewing its lease (its
// Redis client gone, as in a crash or a partition) b answers the process
// lost, with the output it had, never running.
func TestProcessReplicas(t *testing.T) {
	srv := redistest.Start(t)
	seal, err := auth.NewSealer([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	client := func() *store.RedisProcesses {
		c, err := store.NewClient(&policy.RedisState{URL: srv.URL()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return store.NewRedisProcesses(c, "test:", seal)
	}
	ca, err := store.NewClient(&policy.RedisState{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	a := newProcEnv(t, ProcessLimits{Board: store.NewRedisProcesses(ca, "test:", seal), Replica: "a", Lease: 600 * time.Millisecond})
	b := newProcEnv(t, ProcessLimits{Board: client(), Replica: "b"})

	start := answerOf(t, a.ok(t, "s1", StartProcess, map[string]any{
		"command": `echo ready; while read l; do echo "got $l"; done`, "stdin": "open", "until": "ready"}))
	if start.State != "running" || !strings.Contains(start.Output, "ready") {
		t.Fatalf("start: %+v", start)
	}
	id := start.ID

	// Read from the other replica: the output so far, from the board.
	r := answerOf(t, b.ok(t, "s1", ReadProcess, map[string]any{"id": id, "wait_ms": 5000}))
	if r.State != "running" || r.Output != "ready\n" || r.Cursor != start.Cursor || !strings.HasPrefix(r.Replica, "a/") {
		t.Fatalf("read on b: %+v (start cursor %d)", r, start.Cursor)
	}
	// What follows a write on a reaches b: its read waits for it.
	a.ok(t, "s1", WriteProcess, map[string]any{"id": id, "text": "x\n"})
	r = answerOf(t, b.ok(t, "s1", ReadProcess, map[string]any{"id": id, "cursor": r.Cursor, "wait_ms": 20000, "until": "got x"}))
	if r.Output != "got x\n" || r.State != "running" {
		t.Fatalf("read on b after a write on a: %+v", r)
	}

	// Another owner: as an unknown id.
	if res := b.as(t, "s2", ReadProcess, map[string]any{"id": id}); res.Error == nil || res.Error.Type != tool.NotFound {
		t.Fatalf("another owner's read on b: %s", res.Text())
	}
	// Write and stop through b: retryable, naming a.
	for _, call := range []struct {
		name string
		args map[string]any
	}{{WriteProcess, map[string]any{"id": id, "text": "y\n"}}, {StopProcess, map[string]any{"id": id}}} {
		res := b.as(t, "s1", call.name, call.args)
		if res.Error == nil || res.Error.Type != tool.Unavailable || !res.Error.Retryable || !strings.HasPrefix(res.Error.Details["replica"].(string), "a/") {
			t.Fatalf("%s on b: %s", call.name, res.Text())
		}
	}
	list := b.ok(t, "s1", ListProcesses, map[string]any{}).Structured.(map[string]any)["processes"].([]ProcessInfo)
	if len(list) != 1 || list[0].ID != id || list[0].State != "running" || !strings.HasPrefix(list[0].Replica, "a/") {
		t.Fatalf("list on b: %+v", list)
	}
	if list := b.ok(t, "s2", ListProcesses, map[string]any{}).Structured.(map[string]any)["processes"].([]ProcessInfo); len(list) != 0 {
		t.Fatalf("another owner lists %+v", list)
	}

	// a stops renewing its lease: b answers lost, with the last output.
	ca.Close()
	r = answerOf(t, b.ok(t, "s1", ReadProcess, map[string]any{"id": id, "wait_ms": 20000, "cursor": r.Cursor}))
	if r.State != policy.ProcessLost || r.Reason != policy.ProcessLost {
		t.Fatalf("after a's lease expired: %+v", r)
	}
	r = answerOf(t, b.ok(t, "s1", ReadProcess, map[string]any{"id": id}))
	if r.State != policy.ProcessLost || r.Output != "ready\ngot x\n" {
		t.Fatalf("a lost process's output: %+v", r)
	}
	if res := b.as(t, "s1", WriteProcess, map[string]any{"id": id, "text": "z\n"}); res.Error == nil || res.Error.Type != tool.Conflict {
		t.Fatalf("a write to a lost process: %s", res.Text())
	}
	list = b.ok(t, "s1", ListProcesses, map[string]any{}).Structured.(map[string]any)["processes"].([]ProcessInfo)
	if len(list) != 1 || list[0].State != policy.ProcessLost {
		t.Fatalf("list on b after a's lease expired: %+v", list)
	}
}

// TestProcessReplicasUnsealed: a replica with no sealing key does not put
// a process's command line or output on the board; another replica's
// read_process answers its state, keeps the cursor where it was and says
// why there is no output.
func TestProcessReplicasUnsealed(t *testing.T) {
	srv := redistest.Start(t)
	board := func() *store.RedisProcesses {
		c, err := store.NewClient(&policy.RedisState{URL: srv.URL()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return store.NewRedisProcesses(c, "test:", nil)
	}
	a := newProcEnv(t, ProcessLimits{Board: board(), Replica: "a"})
	b := newProcEnv(t, ProcessLimits{Board: board(), Replica: "b"})
	start := answerOf(t, a.ok(t, "s1", StartProcess, map[string]any{"command": "echo ready; sleep 60", "until": "ready"}))
	r := answerOf(t, b.ok(t, "s1", ReadProcess, map[string]any{"id": start.ID, "cursor": 0}))
	res := b.ok(t, "s1", ReadProcess, map[string]any{"id": start.ID, "cursor": 0})
	if r.State != "running" || r.Output != "" || r.Cursor != 0 || !strings.Contains(r.Withheld, "no sealing key") ||
		!strings.Contains(res.Text(), "cannot be read from this replica") {
		t.Fatalf("read on b of an unsealed replica's process: %+v\n%s", r, res.Text())
	}
}
