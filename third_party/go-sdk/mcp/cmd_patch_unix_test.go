// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

//go:build unix

package mcp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// PATCH(toolgate): a CommandTransport's connection reads the command's
// stdout (a pipe the poller waits on) in Read, as an IOTransport over a
// polled pipe does (readsInline), not through a reader goroutine. These
// tests check that it does, that it reads what v1.8.0's reader goroutine
// reads from the same bytes, and that Close still ends a Read in progress,
// whether the command exits when its stdin closes or must be killed.

// commandConn starts argv through a CommandTransport.
func commandConn(t *testing.T, terminate time.Duration, argv ...string) *ioConn {
	t.Helper()
	c, err := (&CommandTransport{Command: exec.Command(argv[0], argv[1:]...), TerminateDuration: terminate}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*ioConn)
}

func TestCommandReadsInline(t *testing.T) {
	if c := commandConn(t, 0, "cat"); c.incoming != nil {
		t.Fatal("a command's connection has a reader goroutine")
	}
	// A command whose stdout is not a pipe of os/exec's (the caller set
	// Stdout: StdoutPipe fails) is not connected at all, as in v1.8.0.
	cmd := exec.Command("cat")
	cmd.Stdout = io.Discard
	if _, err := (&CommandTransport{Command: cmd}).Connect(context.Background()); err == nil {
		t.Fatal("connected a command whose Stdout was set")
	}
}

// TestCommandReadMatchesReaderGoroutine: what a command writes is read as
// v1.8.0 reads the same bytes with its reader goroutine.
func TestCommandReadMatchesReaderGoroutine(t *testing.T) {
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for _, stream := range []string{
		"",
		ping + "\n",
		ping, // no final newline
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"line 1\nline 2"}],"structuredContent":{"content":"line 1\nline 2"}}}` + "\n" +
			`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}` + "\n" +
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"bad"}}` + "\n",
		ping + "\r\n\r\n\n" + ping + "\r\n",
		"{\n \"jsonrpc\": \"2.0\",\n \"id\": 1,\n \"result\": {}\n}\n",
		"[" + ping + "," + ping + "]\n",
		`{"jsonrpc":"2.0","id":1,"result":{"s":"` + strings.Repeat("é\\\"x", 40000) + `"}}` + "\n" + ping + "\n", // longer than a pipe holds
		ping + "\nhello\n",
		ping + "\n" + `{"jsonrpc":"2.0","id":2,"meth`,
		"42\n",
	} {
		file := filepath.Join(t.TempDir(), "stream")
		if err := os.WriteFile(file, []byte(stream), 0o600); err != nil {
			t.Fatal(err)
		}
		inline := commandConn(t, 0, "cat", file)
		if inline.incoming != nil {
			t.Fatal("not read inline")
		}
		got := strings.Join(readAll(t, inline), "\n")

		r, w := pipe(t)
		go func() {
			w.Write([]byte(stream))
			w.Close()
		}()
		goroutine := newIOConnV180(rwc{r, nopCloserWriter{io.Discard}}, 0)
		t.Cleanup(func() { goroutine.Close() })
		if want := strings.Join(readAll(t, goroutine), "\n"); got != want {
			t.Errorf("stream %.80q: read inline from a command:\n%.300s\nwith a reader goroutine:\n%.300s", stream, got, want)
		}
	}
}

// TestCommandReadClose: Close ends a Read waiting for the command's output
// with io.EOF, whether the command exits when its stdin closes (cat) or is
// signalled after TerminateDuration (a shell that ignores SIGTERM, then is
// killed). (v1.8.0's reader goroutine gave io.EOF, or the error of reading
// the pipe Cmd.Wait had closed when it saw that first.)
// TestCommandReadCloseStdoutHeld: Close ends a waiting Read when stdout
// stays open after the command is gone: a child it started holds it, and
// os/exec copies its stderr into a buffer (so Cmd.Wait waits for that
// child, and closes stdout only then).
func TestCommandReadCloseStdoutHeld(t *testing.T) {
	cmd := exec.Command("sh", "-c", `sleep 30 & echo '{"jsonrpc":"2.0","method":"ready"}'; exec cat >/dev/null`)
	cmd.Stderr = &bytes.Buffer{}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	conn, err := (&CommandTransport{Command: cmd, TerminateDuration: 50 * time.Millisecond}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	c := conn.(*ioConn)
	if _, err := c.Read(context.Background()); err != nil { // the child runs
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(context.Background())
		done <- err
	}()
	time.Sleep(100 * time.Millisecond) // Read waits (a Read begun after Close ends at once)
	c.Close()
	select {
	case err := <-done:
		if !errors.Is(err, io.EOF) {
			t.Errorf("Read interrupted by Close: %v, want io.EOF", err)
		}
	case <-time.After(10 * time.Second): // a hang, not a timing: Close returned long ago
		t.Fatal("Read still waits after Close returned, while a child of the command holds stdout")
	}
}

func TestCommandReadClose(t *testing.T) {
	for _, argv := range [][]string{
		{"cat"},
		{"sleep", "30"},
		{"sh", "-c", `trap "" TERM; sleep 30`},
	} {
		t.Run(argv[0], func(t *testing.T) {
			c := commandConn(t, 50*time.Millisecond, argv...)
			done := make(chan error, 1)
			go func() {
				_, err := c.Read(context.Background())
				done <- err
			}()
			c.Close()
			if err := <-done; !errors.Is(err, io.EOF) {
				t.Errorf("Read interrupted by Close: %v, want io.EOF", err)
			}
			if _, err := c.Read(context.Background()); !errors.Is(err, io.EOF) {
				t.Errorf("Read after Close: %v, want io.EOF", err)
			}
		})
	}
}
