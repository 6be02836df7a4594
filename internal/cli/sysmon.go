package cli

import (
	"os"
	"strings"

	"github.com/toolgate/toolgate/audit"
)

// sysmonSetting keeps the runtime's monitor thread (sysmon) from its deep
// sleep: with schedtrace set, sysmon never waits for the next system call
// to wake it, so it backs off to one look every 10 ms and stays there. By
// default it sleeps while every P is idle, the first system call after
// that wakes it (a futex), and it then looks every 20 µs (a nanosleep and
// two context switches each time) until every P is idle again. toolgate
// serve goes idle once per call and wakes it with its first read of the
// request: over HTTP, a read_process with 8 KiB of output costs a tenth
// less CPU without the deep sleep (bench/processes: 323 -> 289 µs, 2.2
// context switches per call fewer). The period is the largest the runtime
// takes (2^31-1 ms, 24.8 days): it prints its one-line scheduler summary
// to standard error only once the machine has been up that long, at start
// and every 24.8 days after.
//
// toolgate proxy does without it where its audit log makes raw system
// calls (audit.RawSupported: Linux on amd64 and arm64): go-sdk reads and
// writes the pipes raw (patch 7), the log appends with
// audit.Options.RawCalls, and a raw call wakes no sysmon, so it sleeps
// deeply while the gateway waits for a call and stays asleep through the
// call. With the setting it looked every 10 ms all along: 100 wake-ups a
// second of an idle gateway, and 0.3 to 0.8 a call for calls 1.5 ms apart
// (each a context switch there and back). Ordinary calls remain off the
// common path and wake it as they come: the fsync of a denial's record and
// the periodic one, the state.redis client's network calls, a spilled
// result's file. What sysmon does for a busy process then waits for its
// next wake-up, at the next timer (the audit log's sync, when the log is
// on: within a second) or ordinary call: taking the processor from a
// goroutine that ran over 10 ms for another (the collector preempts
// without it), which a relayed call's own work, bounded by the output
// budget, does not come near. Elsewhere the proxy starts itself again with
// the setting, as serve does.
const sysmonSetting = "schedtrace=2147483647"

// sysmonEnv says what to do about sysmonSetting in a process with args and
// GODEBUG value godebug: start the program again (reexec) with GODEBUG
// value, for toolgate serve (and proxy where audit.RawSupported is false);
// or, in the process so
// started, where the setting is in force (the runtime read it at start),
// give GODEBUG its value before back (restore; "" unsets it) for the
// processes it starts.
// A GODEBUG that names schedtrace already is the user's: nothing is done.
func sysmonEnv(args []string, godebug string) (value string, reexec, restore bool) {
	if rest, ok := strings.CutSuffix(godebug, sysmonSetting); ok && (rest == "" || strings.HasSuffix(rest, ",")) {
		return strings.TrimSuffix(rest, ","), false, true
	}
	if len(args) < 2 || args[1] != "serve" && (args[1] != "proxy" || audit.RawSupported) || strings.Contains(godebug, "schedtrace=") {
		return "", false, false
	}
	if godebug != "" {
		return godebug + "," + sysmonSetting, true, false
	}
	return sysmonSetting, true, false
}

// quietSysmon starts toolgate serve (and proxy, see sysmonSetting) again
// (the same process, program file and arguments) with sysmonSetting in
// GODEBUG, and in the process started so takes it out again, so that the
// upstreams and helpers it starts get the environment it was given. Where the program cannot be
// started again (not Linux, or the exec failed) it goes on as it is.
func quietSysmon() {
	value, reexec, restore := sysmonEnv(os.Args, os.Getenv("GODEBUG"))
	switch {
	case restore && value == "":
		os.Unsetenv("GODEBUG")
	case restore:
		os.Setenv("GODEBUG", value)
	case reexec:
		env := []string{"GODEBUG=" + value}
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "GODEBUG=") {
				env = append(env, kv)
			}
		}
		execSelf(env) // returns only when it failed
	}
}
