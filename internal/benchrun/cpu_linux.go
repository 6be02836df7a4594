package benchrun

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// TreeCPU reads the CPU time so far of process pid and of every process
// below it: for each, utime, stime, cutime and cstime of /proc/PID/stat
// (10 ms ticks), so that the children it waited for count, and those
// still running too. A child waited for moves from the second sum to its
// parent's cutime: the total only grows. found is false when pid is not
// (or no longer) among the processes; err is an error listing /proc.
func TreeCPU(pid int) (cpu time.Duration, found bool, err error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false, err
	}
	parent, ticks := map[int]int{}, map[int]int64{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid …: comm may hold spaces, the last ")"
		// ends it; ppid is field 4, the four times fields 14 to 17.
		f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
		parent[p], _ = strconv.Atoi(f[1])
		for _, x := range f[11:15] {
			v, _ := strconv.ParseInt(x, 10, 64)
			ticks[p] += v
		}
	}
	_, found = ticks[pid]
	var sum int64
	for p, t := range ticks {
		for q := p; q > 1; q = parent[q] {
			if q == pid {
				sum += t
				break
			}
		}
	}
	return time.Duration(sum) * 10 * time.Millisecond, found, nil
}
