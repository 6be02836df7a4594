//go:build linux

package sandbox

import (
	"encoding/binary"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// decide runs the policy's BPF program on one system call.
func decide(t *testing.T, network bool, name string, args ...uint64) uint32 {
	t.Helper()
	insts, err := assemble(filterRules(network, false, unix.SECCOMP_RET_USER_NOTIF))
	if err != nil {
		t.Fatal(err)
	}
	vm, err := bpf.NewVM(insts)
	if err != nil {
		t.Fatal(err)
	}
	nr, ok := syscallNumber(name)
	if !ok {
		t.Fatalf("no number for %s", name)
	}
	// The kernel loads 32-bit words in native (little-endian) order; the
	// bpf VM loads them big-endian: store each word big-endian where the
	// kernel's layout puts it.
	data := make([]byte, 64)
	binary.BigEndian.PutUint32(data[0:], uint32(nr))
	binary.BigEndian.PutUint32(data[4:], uint32(auditArch))
	for i, a := range args {
		binary.BigEndian.PutUint32(data[16+8*i:], uint32(a))
		binary.BigEndian.PutUint32(data[16+8*i+4:], uint32(a>>32))
	}
	out, err := vm.Run(data)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(out)
}

func TestFilterDecisions(t *testing.T) {
	const (
		allow  = unix.SECCOMP_RET_ALLOW
		notify = unix.SECCOMP_RET_USER_NOTIF
		eperm  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
		enosys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	)
	cases := []struct {
		network bool
		name    string
		args    []uint64
		want    uint32
	}{
		{false, "read", nil, allow},
		{false, "socket", []uint64{unix.AF_INET, unix.SOCK_STREAM}, notify},
		{false, "socket", []uint64{unix.AF_INET6, unix.SOCK_DGRAM}, notify},
		{false, "socket", []uint64{1<<32 | unix.AF_INET, unix.SOCK_STREAM}, notify},
		{false, "socket", []uint64{unix.AF_UNIX, unix.SOCK_STREAM}, eperm},
		{false, "socket", []uint64{unix.AF_NETLINK, unix.SOCK_RAW}, eperm},
		{false, "socket", []uint64{unix.AF_PACKET, unix.SOCK_RAW}, notify},
		{false, "socket", []uint64{unix.AF_VSOCK, unix.SOCK_STREAM}, notify},
		{false, "socketpair", []uint64{unix.AF_UNIX, unix.SOCK_STREAM}, allow},
		{true, "socket", []uint64{unix.AF_INET, unix.SOCK_STREAM}, allow},
		{true, "socket", []uint64{unix.AF_INET6, unix.SOCK_STREAM}, allow},
		{true, "socket", []uint64{unix.AF_UNIX, unix.SOCK_STREAM}, eperm},
		{true, "socket", []uint64{unix.AF_PACKET, unix.SOCK_RAW}, notify},
		{true, "socket", []uint64{unix.AF_VSOCK, unix.SOCK_STREAM}, notify},
		{false, "ptrace", nil, notify},
		{false, "mount", nil, notify},
		{false, "unshare", nil, notify},
		{false, "bpf", nil, notify},
		{false, "keyctl", nil, eperm},
		{false, "io_uring_setup", nil, eperm},
		{false, "clone3", nil, enosys},
		{false, "clone", []uint64{17}, allow},
		{false, "clone", []uint64{unix.CLONE_VM | unix.CLONE_THREAD | unix.CLONE_SIGHAND}, allow},
		{false, "clone", []uint64{unix.CLONE_NEWUSER | 17}, notify},
		{false, "clone", []uint64{unix.CLONE_NEWNET}, notify},
		{false, "ioctl", []uint64{0, unix.TIOCSTI}, notify},
		{false, "ioctl", []uint64{0, unix.TCGETS}, allow},
	}
	for _, c := range cases {
		if got := decide(t, c.network, c.name, c.args...); got != c.want {
			t.Errorf("network=%v %s%v: got %#x, want %#x", c.network, c.name, c.args, got, c.want)
		}
	}
}
