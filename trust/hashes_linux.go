package trust

import "syscall"

func statTimes(st *syscall.Stat_t) (mod, change syscall.Timespec) { return st.Mtim, st.Ctim }
