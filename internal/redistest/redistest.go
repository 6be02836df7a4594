// Package redistest starts a real redis-server for tests: on a free
// loopback port, in a temporary folder, without persistence, stopped when
// the test ends. A test can kill and restart it to play an outage.
//
// Tests that need it never skip: without redis-server they fail and name
// scripts/test-deps.sh, which installs it.
package redistest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a running (or stopped) redis-server.
type Server struct {
	t    testing.TB
	dir  string
	port int
	args []string // more redis-server options

	mu  sync.Mutex
	cmd *exec.Cmd
}

// Start starts a redis-server for the test, with more options if given
// ("--requirepass", "pw"), and stops it in t.Cleanup.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatal("redis-server is not installed: run scripts/test-deps.sh (it installs Debian's redis-server)")
	}
	quiet.Do(func() { redis.SetLogger(discard{}) })
	s := &Server{t: t, dir: t.TempDir(), port: freePort(t), args: args}
	s.Restart()
	t.Cleanup(s.Kill)
	return s
}

// quiet silences go-redis's own log of every failed dial while a test
// plays an outage.
var quiet sync.Once

type discard struct{}

func (discard) Printf(context.Context, string, ...any) {}

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL is the server's redis:// URL, database 0.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Kill stops the server at once (SIGKILL), as a crash would; its data is
// lost. Killing a stopped server does nothing.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	s.cmd.Wait()
	s.cmd = nil
}

// Restart (re)starts the server on the same port, empty, and returns once
// it accepts connections.
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd := exec.Command("redis-server", append([]string{
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--dir", s.dir, "--save", "", "--appendonly", "no",
		"--protected-mode", "yes", "--loglevel", "warning", "--logfile", "redis.log"}, s.args...)...)
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("starting redis-server: %v (scripts/test-deps.sh installs it)", err)
	}
	s.cmd = cmd
	for range 500 { // up to 5 s
		if c, err := net.Dial("tcp", s.Addr()); err == nil {
			fmt.Fprint(c, "PING\r\n")
			line, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if strings.HasPrefix(line, "+PONG") || strings.HasPrefix(line, "-NOAUTH") {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	s.t.Fatalf("redis-server on %s did not answer PING; its log:\n%s", s.Addr(), log)
}

// freePort returns a loopback port nothing listens on right now.
func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
