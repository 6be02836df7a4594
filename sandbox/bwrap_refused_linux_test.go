package sandbox

import "testing"

// TestBwrapRefusedHere: only bubblewrap's refusals last (no user
// namespaces, EPERM or EACCES on its namespaces, uid map or /proc); the
// same steps failing for a passing shortage are tried again, or one
// moment's shortage would move every later command to a weaker backend.
func TestBwrapRefusedHere(t *testing.T) {
	for why, lasting := range map[string]bool{
		"No permissions to create new namespace, likely because the kernel does not allow non-privileged user namespaces.":                            true,
		"No permissions to create a new namespace, likely because the kernel does not allow non-privileged user namespaces.":                          true,
		"No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces.":                          true,
		"Creating new namespace failed, likely because the kernel does not support user namespaces.  bwrap must be installed setuid on such systems.": true,
		"Creating new namespace failed: Operation not permitted":                                                                                      true,
		"setting up uid map: Permission denied":                                                             true,
		"Can't mount proc on /newroot/proc: Operation not permitted":                                        true,
		"Creating new namespace failed: Resource temporarily unavailable":                                   false,
		"Creating new namespace failed: Cannot allocate memory":                                             false,
		"Creating new namespace failed: nesting depth or /proc/sys/user/max_*_namespaces exceeded (ENOSPC)": false,
		"Can't mount proc on /newroot/proc: No space left on device":                                        false,
		"Can't find source path /nonexistent: No such file or directory":                                    false,
	} {
		if got := bwrapRefusedHere(why); got != lasting {
			t.Errorf("%q: lasting %v, want %v", why, got, lasting)
		}
	}
}
