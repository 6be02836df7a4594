//go:build !linux

package audit

// Without open file description locks a waiting writer cannot make itself
// known, so a Log takes the file lock for each append and lets go after it
// (unless Options.Exclusive).
const holdLock = false

func setWaiting(uintptr, bool, bool) error      { return nil }
func othersWaiting(uintptr, bool) (bool, error) { return false, nil }
