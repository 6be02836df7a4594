package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/audit"
)

// TestProxyGodebug: toolgate proxy runs without the runtime setting that
// keeps sysmon from its deep sleep (its calls wake no sysmon, internal/cli
// sysmon.go; where its audit log makes raw calls, else it starts itself
// again with the setting), with the GODEBUG it was given, and the upstream
// it starts gets that GODEBUG too: none, or the user's own (a shell notes
// it, then becomes toolgate serve, which starts itself again with the
// setting).
func TestProxyGodebug(t *testing.T) {
	root, _ := serveWorkspace(t)
	for _, godebug := range []string{"", "http2client=0"} {
		t.Run("GODEBUG="+godebug, func(t *testing.T) {
			given := filepath.Join(t.TempDir(), "godebug")
			cmd := exec.Command(bin, "proxy", "--audit", "off", "--name", "up", "--unisolated", "--",
				"/bin/sh", "-c", `printf %s "$GODEBUG" > "$0"; exec "$@"`, given, bin, "serve", "--root", root, "--audit", "off")
			cmd.Env = append(os.Environ(), "TOOLGATE_STATE="+filepath.Join(t.TempDir(), "state"))
			if godebug != "" {
				cmd.Env = append(cmd.Env, "GODEBUG="+godebug)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "sysmon-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__read_file", Arguments: map[string]any{"path": "a.txt"}})
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError {
				t.Fatalf("read_file through the proxy: %v", res.Content[0])
			}
			proxyWant := ""
			if godebug != "" {
				proxyWant = "GODEBUG=" + godebug
			}
			if !audit.RawSupported { // the proxy starts itself again with the setting
				proxyWant = "GODEBUG=" + strings.TrimPrefix(godebug+",schedtrace=2147483647", ",")
			}
			if got := environGodebug(t, cmd.Process.Pid); got != proxyWant {
				t.Errorf("the proxy runs with %q, want %q", got, proxyWant)
			}
			want := "schedtrace=2147483647"
			if godebug != "" {
				want = godebug + "," + want
			}
			if comm, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/comm"); err != nil || string(comm) != "toolgate\n" {
				t.Errorf("the proxy's name in ps is %q (%v), want toolgate", comm, err)
			}
			if got, err := os.ReadFile(given); err != nil || string(got) != godebug {
				t.Errorf("the upstream was given GODEBUG %q (%v), want %q", got, err, godebug)
			}
			if got := environGodebug(t, onlyChild(t, cmd.Process.Pid)); got != "GODEBUG="+want {
				t.Errorf("the upstream, toolgate serve, runs with %q, want GODEBUG=%s", got, want)
			}
		})
	}
}

// environGodebug returns the GODEBUG=… entry of the environment process pid
// was started with, or "".
func environGodebug(t *testing.T, pid int) string {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	for kv := range bytes.SplitSeq(data, []byte{0}) {
		if s := string(kv); strings.HasPrefix(s, "GODEBUG=") {
			return s
		}
	}
	return ""
}

// onlyChild returns the pid of pid's only child (started by any of its
// threads).
func onlyChild(t *testing.T, pid int) int {
	t.Helper()
	tasks, err := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	if err != nil {
		t.Fatal(err)
	}
	var f []string
	for _, task := range tasks {
		data, err := os.ReadFile(task)
		if err != nil {
			t.Fatal(err)
		}
		f = append(f, strings.Fields(string(data))...)
	}
	if len(f) != 1 {
		t.Fatalf("process %d has children %q, want one", pid, f)
	}
	c, err := strconv.Atoi(f[0])
	if err != nil {
		t.Fatal(err)
	}
	return c
}
