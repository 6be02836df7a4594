package sandbox

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// namespaceIDs returns the inode of each namespace of the process whose
// /proc folder is dir ("/proc/self", "/proc/123"), by Protections'
// names; a namespace that cannot be read is left out.
func namespaceIDs(dir string) map[string]uint64 {
	ids := map[string]uint64{}
	for _, k := range namespaceKinds {
		var st syscall.Stat_t
		if err := syscall.Stat(dir+"/ns/"+k.proc, &st); err == nil {
			ids[k.name] = st.Ino
		}
	}
	return ids
}

// newNamespaces lists, in namespaceKinds' order, the namespaces of a
// command (ids measured inside the sandbox) that differ from this
// process's: the ones it really ran in, whatever was asked.
func newNamespaces(cmd map[string]uint64) []string {
	own := namespaceIDs("/proc/self")
	out := []string{}
	for _, k := range namespaceKinds {
		id, ok := cmd[k.name]
		if ok && id != 0 && own[k.name] != 0 && id != own[k.name] {
			out = append(out, k.name)
		}
	}
	return out
}

// statusField returns the value of one field of /proc/self/status
// ("Seccomp", "NoNewPrivs"), or "" when it is not there.
func statusField(name string) string {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && k == name {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// seccompFiltered reports whether /proc/self/status says that a seccomp
// filter holds this process (mode 2).
func seccompFiltered() bool {
	n, err := strconv.Atoi(statusField("Seccomp"))
	return err == nil && n == 2
}
