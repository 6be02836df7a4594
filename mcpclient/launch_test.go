package mcpclient_test

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/mcpclient"
	"github.com/toolgate/toolgate/tool"
)

// procStreams is a process started by the test's launcher.
type procStreams struct {
	io.Reader
	io.WriteCloser
	cmd *exec.Cmd
}

func (p *procStreams) Close() error {
	p.WriteCloser.Close()
	p.cmd.Process.Kill()
	return p.cmd.Wait()
}

// pipedStreams is a launched process whose streams are pipes
// (mcpclient.Piped): the connection uses them, never its Read or Write.
type pipedStreams struct {
	*procStreams
	out, in *os.File
}

func (p *pipedStreams) Pipes() (stdout, stdin *os.File) { return p.out, p.in }

func (p *pipedStreams) Read([]byte) (int, error) {
	return 0, errors.New("read through Read, not the pipe")
}

func (p *pipedStreams) Write([]byte) (int, error) {
	return 0, errors.New("written through Write, not the pipe")
}

// start starts c's command as the test's launchers do: with c's
// environment and PATH alone, its streams pipes.
func start(c *mcpclient.Config) (*pipedStreams, error) {
	cmd := exec.Command(c.Command, c.Args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range c.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &pipedStreams{&procStreams{Reader: out, WriteCloser: in, cmd: cmd}, out.(*os.File), in.(*os.File)}, nil
}

// TestLaunch: a stdio upstream with a launcher is started by it, on every
// (re)connect, with the environment the launcher gives (not this
// process's), and stopped through it; a launched process that gives its
// pipes (mcpclient.Piped) is read and written through them, and stopped
// through its Close all the same.
func TestLaunch(t *testing.T) {
	for _, piped := range []bool{false, true} {
		t.Run(map[bool]string{false: "streams", true: "piped"}[piped], func(t *testing.T) { testLaunch(t, piped) })
	}
}

func testLaunch(t *testing.T, piped bool) {
	cfg := stdio(t, "up")
	var launches atomic.Int32
	var last atomic.Pointer[procStreams]
	cfg.Launch = func(ctx context.Context, c *mcpclient.Config) (io.ReadWriteCloser, error) {
		launches.Add(1)
		p, err := start(c)
		if err != nil {
			return nil, err
		}
		last.Store(p.procStreams)
		if piped {
			return p, nil
		}
		return p.procStreams, nil
	}
	u, err := mcpclient.Connect(context.Background(), cfg, mcpclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tools := u.Tools()
	if res := run(t, find(t, tools, "up__echo"), `{"text":"boxed"}`); res.Error != nil || res.Content[0].Text != "boxed" {
		t.Fatalf("echo: %+v", res)
	}
	res := run(t, find(t, tools, "up__crash"), `{}`)
	if res.Error == nil || res.Error.Type != tool.Unavailable {
		t.Fatalf("crash: %+v", res.Error)
	}
	deadline := time.Now().Add(10 * time.Second)
	for u.InitializeResult() != nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if res := run(t, find(t, tools, "up__echo"), `{"text":"again"}`); res.Error != nil {
		t.Fatalf("after the crash: %+v", res)
	}
	if n := launches.Load(); n != 2 {
		t.Errorf("%d launches, want 2 (start and reconnect)", n)
	}
	p := last.Load()
	u.Close()
	if p.cmd.ProcessState == nil {
		t.Error("Close did not stop the launched process")
	}
}

// slowClose is a launched process whose Close takes a while (a boxed
// upstream's gives it seconds to end): the session's end is known later.
type slowClose struct{ *pipedStreams }

func (p slowClose) Close() error {
	time.Sleep(1500 * time.Millisecond)
	return p.pipedStreams.Close()
}

// TestReconnectAtOnce: the call after a crash starts the upstream again
// even before the crashed session's transport has closed (a slow Close),
// not the dead session's error a second time.
func TestReconnectAtOnce(t *testing.T) {
	cfg := stdio(t, "up")
	var launches atomic.Int32
	cfg.Launch = func(ctx context.Context, c *mcpclient.Config) (io.ReadWriteCloser, error) {
		launches.Add(1)
		p, err := start(c)
		if err != nil {
			return nil, err
		}
		return slowClose{p}, nil
	}
	u, err := mcpclient.Connect(context.Background(), cfg, mcpclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	tools := u.Tools()
	if res := run(t, find(t, tools, "up__crash"), `{}`); res.Error == nil || res.Error.Type != tool.Unavailable {
		t.Fatalf("crash: %+v", res.Error)
	}
	start := time.Now()
	res := run(t, find(t, tools, "up__echo"), `{"text":"again"}`)
	if res.Error != nil || res.Content[0].Text != "again" {
		t.Fatalf("the call right after the crash: %+v", res)
	}
	if n := launches.Load(); n != 2 {
		t.Errorf("%d launches, want 2 (start and reconnect)", n)
	}
	t.Logf("reconnected in %v", time.Since(start))
}
