package redistest_test

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/redistest"
)

func ping(addr string) bool {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return false
	}
	defer c.Close()
	fmt.Fprint(c, "PING\r\n")
	line, _ := bufio.NewReader(c).ReadString('\n')
	return strings.HasPrefix(line, "+PONG")
}

func TestKillRestart(t *testing.T) {
	s := redistest.Start(t)
	if !ping(s.Addr()) {
		t.Fatal("no PONG after Start")
	}
	s.Kill()
	if ping(s.Addr()) {
		t.Fatal("PONG after Kill")
	}
	s.Kill() // twice is fine
	s.Restart()
	if !ping(s.Addr()) {
		t.Fatal("no PONG after Restart")
	}
}
