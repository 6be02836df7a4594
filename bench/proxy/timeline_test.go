package main

import (
	"strings"
	"testing"
	"time"
)

// A direct call as perf script prints it (-F pid,tid,time,event,trace
// --ns), with what must not count: another process on the same fd number,
// a read that returned EAGAIN, the request written in two writes, the
// Node process's write to another fd, and a call cut by the window's end.
const directScript = `
  100/101 5.000000000: syscalls:sys_enter_write: fd: 0x0000000b, buf: 0x1, count: 0x00000010
  100/101 5.000001000: syscalls:sys_exit_write: 0x10
  100/101 5.000002000: syscalls:sys_enter_write: fd: 0x0000000b, buf: 0x1, count: 0x00000001
  999/999 5.000003000: syscalls:sys_enter_read: fd: 0x00000000, buf: 0x1, count: 0x00000400
  999/999 5.000004000: syscalls:sys_exit_read: 0x11
  200/202 5.000005000: syscalls:sys_enter_read: fd: 0x00000000, buf: 0x1, count: 0x00010000
  200/203 5.000006000: syscalls:sys_enter_read: fd: 0x00000014, buf: 0x1, count: 0x00000400
  200/202 5.000012000: syscalls:sys_exit_read: 0x11
  200/203 5.000013000: syscalls:sys_exit_read: 0x400
  200/202 5.000200000: syscalls:sys_enter_write: fd: 0x00000002, buf: 0x1, count: 0x00000010
  200/202 5.000300000: syscalls:sys_enter_write: fd: 0x00000001, buf: 0x1, count: 0x00000800
  100/104 5.000310000: syscalls:sys_enter_read: fd: 0x00000005, buf: 0x1, count: 0x00001000
  100/104 5.000311000: syscalls:sys_exit_read: 0xfffffffffffffff5
  100/105 5.000315000: syscalls:sys_enter_read: fd: 0x00000005, buf: 0x1, count: 0x00001000
  100/105 5.000320000: syscalls:sys_exit_read: 0x800
  100/101 6.000000000: syscalls:sys_enter_write: fd: 0x0000000b, buf: 0x1, count: 0x00000010
  200/202 6.000012000: syscalls:sys_exit_read: 0x11
`

func TestParse(t *testing.T) {
	steps := []step{
		{"A", 100, true, map[int]bool{11: true}},
		{"D", 200, false, map[int]bool{0: true}},
		{"E", 200, true, map[int]bool{1: true}},
		{"H", 100, false, map[int]bool{5: true}},
	}
	chains := parse(strings.NewReader(directScript), steps)
	if len(chains) != 1 {
		t.Fatalf("%d chains, want 1: %v", len(chains), chains)
	}
	c := chains[0]
	want := map[string]time.Duration{"A": 5_000_000_000, "D": 5_000_012_000, "E": 5_000_300_000, "H": 5_000_320_000}
	for k, v := range want {
		if c[k] != v {
			t.Errorf("%s at %d, want %d", k, c[k], v)
		}
	}
}
