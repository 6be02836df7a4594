package cli

import (
	"testing"

	"github.com/toolgate/toolgate/audit"
)

// TestSysmonEnv: toolgate serve starts again with the setting added to
// GODEBUG (alone or after the user's), the process so started gives
// GODEBUG its value before back, and nothing is done for other commands
// (toolgate proxy among them where its audit log makes raw calls: its calls
// wake no sysmon) or when the user names schedtrace.
func TestSysmonEnv(t *testing.T) {
	proxy := []string{"toolgate", "proxy", "--", "node", "server.js"}
	serve := []string{"toolgate", "serve", "--root", "."}
	for _, tc := range []struct {
		name            string
		args            []string
		godebug         string
		value           string
		reexec, restore bool
	}{
		{"proxy, no GODEBUG", proxy, "", proxyValue(""), !audit.RawSupported, false},
		{"proxy, the user's GODEBUG", proxy, "http2client=0", proxyValue("http2client=0"), !audit.RawSupported, false},
		{"serve, the user's GODEBUG", serve, "http2client=0", "http2client=0," + sysmonSetting, true, false},
		{"started again, no GODEBUG before", serve, sysmonSetting, "", false, true},
		{"started again, the user's GODEBUG before", serve, "http2client=0," + sysmonSetting, "http2client=0", false, true},
		{"the user's schedtrace", serve, "schedtrace=1000", "", false, false},
		{"the user's schedtrace=0", serve, "schedtrace=0,http2client=0", "", false, false},
		{"a setting that only ends like it", serve, "xschedtrace=2147483647", "", false, false},
		{"serve", []string{"toolgate", "serve", "--http", "127.0.0.1:0"}, "", sysmonSetting, true, false},
		{"serve started again", []string{"toolgate", "serve"}, sysmonSetting, "", false, true},
		{"call", []string{"toolgate", "call", "read_file"}, "", "", false, false},
		{"proxy as an argument", []string{"toolgate", "call", "proxy"}, "", "", false, false},
		{"no command", []string{"toolgate"}, "", "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			value, reexec, restore := sysmonEnv(tc.args, tc.godebug)
			if value != tc.value || reexec != tc.reexec || restore != tc.restore {
				t.Fatalf("sysmonEnv = %q, reexec %v, restore %v; want %q, %v, %v", value, reexec, restore, tc.value, tc.reexec, tc.restore)
			}
		})
	}
}

// proxyValue is the GODEBUG toolgate proxy starts itself again with, given
// godebug: none where its audit log makes raw calls.
func proxyValue(godebug string) string {
	switch {
	case audit.RawSupported:
		return ""
	case godebug == "":
		return sysmonSetting
	}
	return godebug + "," + sysmonSetting
}
