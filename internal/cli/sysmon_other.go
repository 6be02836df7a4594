//go:build !linux

package cli

// execSelf does nothing: only Linux starts the program again for
// sysmonSetting.
func execSelf([]string) {}
