package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/internal/redistest"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/store"
)

// TestServeProcessesReplicas: two `serve --http --stateless` replicas over
// one real redis-server. A process started through replica a is read and
// listed through replica b (same conversation), unknown to another
// conversation there; stopping it through b is a retryable unavailable
// naming replica a; Redis holds its output and command line sealed only.
// When a is killed (SIGKILL), its process is gone from
// the host and b answers it lost once a's lease has expired, never running.
func TestServeProcessesReplicas(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv := redistest.Start(t)
	ws := workspace(t)
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	os.WriteFile(pol, []byte(processPolicy+"state:\n  redis:\n    url: "+srv.URL()+"\n"), 0o644)
	start := func(name string) (*mcp.ClientSession, *exec.Cmd) {
		cmd := exec.Command(bin, "serve", "--root", ws, "--policy", pol, "--audit", "off", "--http", "127.0.0.1:0", "--stateless")
		cmd.Env = append(os.Environ(), "TOOLGATE_REPLICA="+name, "TOOLGATE_STATE="+filepath.Join(dir, "state-"+name),
			"TOOLGATE_TOKEN_KEY="+strings.Repeat("k", 40))
		stderr, _ := cmd.StderrPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })
		found := make(chan string, 1)
		go func() {
			for sc := bufio.NewScanner(stderr); sc.Scan(); {
				if m := urlRE.FindStringSubmatch(sc.Text()); m != nil {
					found <- m[1]
				}
			}
		}()
		var u string
		select {
		case u = <-found:
		case <-time.After(time.Minute):
			t.Fatalf("replica %s did not announce its address", name)
		}
		c := mcp.NewClient(&mcp.Implementation{Name: "replicas-test", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: u}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs, cmd
	}
	a, cmdA := start("a")
	b, _ := start("b")
	call := func(cs *mcp.ClientSession, conv, name string, args map[string]any) (map[string]any, string, bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Meta: mcp.Meta{"toolgate/conversation": conv}, Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var st map[string]any
		if raw, err := json.Marshal(res.StructuredContent); err == nil {
			json.Unmarshal(raw, &st)
		}
		return st, text(res), res.IsError
	}

	st, txt, _ := call(a, "conv-1", "start_process", map[string]any{"command": "echo ready; exec sleep 1000", "until": "ready", "yield_ms": 20000})
	if st["state"] != "running" {
		t.Fatalf("start_process on a: %s", txt)
	}
	id := st["id"].(string)
	// The shell answers "ready" before it becomes sleep: wait for sleep.
	pids := descendants(cmdA.Process.Pid, "sleep")
	for deadline := time.Now().Add(20 * time.Second); len(pids) == 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		pids = descendants(cmdA.Process.Pid, "sleep")
	}
	if len(pids) != 1 {
		t.Fatalf("the process on the host: %v", pids)
	}
	st, txt, _ = call(b, "conv-1", "read_process", map[string]any{"id": id, "wait_ms": 10000})
	if st["state"] != "running" || st["output"] != "ready\n" || !strings.HasPrefix(fmt.Sprint(st["replica"]), "a/") {
		t.Fatalf("read_process on b: %s", txt)
	}
	// What Redis holds of it: neither its output nor its command line in
	// the clear (sealed with the key of $TOOLGATE_TOKEN_KEY).
	rc, err := store.NewClient(&policy.RedisState{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	keys := rc.Keys(ctx, "*").Val()
	for _, k := range keys {
		for _, v := range rc.HGetAll(ctx, k).Val() {
			if strings.Contains(v, "ready") || strings.Contains(v, "sleep") {
				t.Fatalf("Redis holds %q in the clear under %s", v, k)
			}
		}
	}
	if len(keys) == 0 {
		t.Fatal("nothing in Redis")
	}
	if _, txt, isErr := call(b, "conv-2", "read_process", map[string]any{"id": id}); !isErr || !strings.Contains(txt, "no process") {
		t.Fatalf("another conversation read it on b: %s", txt)
	}
	if _, txt, isErr := call(b, "conv-1", "stop_process", map[string]any{"id": id}); !isErr || !strings.Contains(txt, "unavailable") ||
		!strings.Contains(txt, "runs on replica a/") {
		t.Fatalf("stop_process on b: %s", txt)
	}
	st, txt, _ = call(b, "conv-1", "list_processes", map[string]any{})
	if list, _ := st["processes"].([]any); len(list) != 1 || !strings.Contains(txt, id) {
		t.Fatalf("list_processes on b: %s", txt)
	}

	// Replica a dies: its process with it; b answers lost once the lease
	// (15 s) has expired.
	cmdA.Process.Signal(syscall.SIGKILL)
	waitNone(t, pids)
	for range 3 {
		if st, txt, _ = call(b, "conv-1", "read_process", map[string]any{"id": id, "cursor": 6, "wait_ms": 30000}); st["state"] != "running" {
			break
		}
	}
	if st["state"] != "lost" || !strings.Contains(txt, "stopped renewing its lease") {
		t.Fatalf("read_process on b after a died: %s", txt)
	}
}

// TestServeProcessesUnsealedWarns: with state.redis and no secret to seal
// what the replicas share of their processes, serve says so at start
// (what stays on the replica and which variable shares it); with the
// secret it says nothing of it; nor does a call.
func TestServeProcessesUnsealedWarns(t *testing.T) {
	srv := redistest.Start(t)
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	os.WriteFile(pol, []byte(processPolicy+"state:\n  redis:\n    url: "+srv.URL()+"\n"), 0o644)
	for _, key := range []string{"", strings.Repeat("k", 40)} {
		cmd := exec.Command(bin, "serve", "--root", workspace(t), "--policy", pol, "--audit", "off")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TOOLGATE_STATE=" + filepath.Join(dir, "state")}
		if key != "" {
			cmd.Env = append(cmd.Env, "TOOLGATE_TOKEN_KEY="+key)
		}
		cmd.Stdin = strings.NewReader("")
		out, _ := cmd.CombinedOutput()
		warned := strings.Contains(string(out), "no secret seals what the replicas share of their processes") && strings.Contains(string(out), "TOOLGATE_TOKEN_KEY")
		if warned != (key == "") {
			t.Errorf("key %q: warned %v, want %v:\n%s", key, warned, key == "", out)
		}
	}
	// One call is no replica: nothing of it to share, nothing to warn of.
	cmd := exec.Command(bin, "call", "--policy", pol, "--audit", "off", "list_directory", `{"path": "."}`)
	cmd.Dir = workspace(t)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TOOLGATE_STATE=" + filepath.Join(dir, "state")}
	if out, err := cmd.CombinedOutput(); err != nil || strings.Contains(string(out), "no secret seals") {
		t.Errorf("call: %v, want no warning of processes:\n%s", err, out)
	}
}
