//go:build linux

package sandbox

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKillSessionSparesReusedPid: a process of a command's session that
// ends between the look at its session and the kill leaves its pid to
// another process (here made to get it through ns_last_pid), which the
// kill must not reach: it is signalled through a pidfd taken before the
// look, never by its pid (review S12).
func TestKillSessionSparesReusedPid(t *testing.T) {
	leader := exec.Command("/bin/sh", "-c", "sleep 300 & echo $!; wait")
	leader.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := leader.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := leader.Start(); err != nil {
		t.Fatal(err)
	}
	defer leader.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	member, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	var innocent *exec.Cmd
	sessionChecked = func(pid int) {
		if pid != member || innocent != nil {
			return
		}
		// The member ends (its shell reaps it) and its pid goes to a
		// process outside the session.
		syscall.Kill(member, syscall.SIGKILL)
		for i := 0; i < 1000; i++ {
			if _, err := os.Stat("/proc/" + strconv.Itoa(member)); err != nil {
				break
			}
			time.Sleep(time.Millisecond)
		}
		for range 200 {
			os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(member-1)), 0)
			c := exec.Command("sleep", "300")
			if err := c.Start(); err != nil {
				t.Error(err)
				return
			}
			if c.Process.Pid == member {
				innocent = c
				return
			}
			c.Process.Kill()
			c.Wait()
		}
	}
	defer func() { sessionChecked = nil }()
	killSession(leader.Process.Pid)
	if innocent == nil {
		t.Fatalf("the member's pid %d could not be given to another process", member)
	}
	defer func() { innocent.Process.Kill(); innocent.Wait() }()
	time.Sleep(50 * time.Millisecond)
	if st, ok := procStat(member); !ok || st.state == "Z" {
		t.Fatalf("the process that took the session member's pid %d was killed", member)
	}
}
