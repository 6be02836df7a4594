package exec

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/toolgate/toolgate/policy"
)

// protectedMounts returns the entries of root that a command must not
// change, to be mounted read-only over the writable workspace: the
// policy's config paths (policy.ConfigPaths) that exist there. Something
// outside the sandbox acts on each later — git on its folder (hooks,
// config with core.fsmonitor/core.hooksPath, submodule gitdirs), a shell on
// its start-up files, an editor or a coding agent on its settings and
// instructions, toolgate on its own files — so a command cannot do what
// write_file is refused. Like Codex's workspace-write mode, .git is
// read-only as a whole: git status and log work, git commit inside the
// sandbox does not.
//
// An entry reached through a symbolic link (the entry itself or a folder
// on the way, as in .github/…) is never listed: the sandbox would mount
// what it points to, perhaps a folder outside the workspace. An entry that
// does not exist cannot be covered by a mount (creating it would change
// the workspace); the policy's default deny rules still refuse the plain
// spellings of such writes (a redirection, cp, mv, …).
func protectedMounts(root string) []string {
	var out []string
	for _, c := range policy.ConfigPaths() {
		if p, ok := plainEntry(root, c.Name); ok {
			out = append(out, p)
		}
	}
	return out
}

// plainEntry returns root/name when it is a folder or a regular file and no
// component of name is a symbolic link.
func plainEntry(root, name string) (string, bool) {
	p := root
	for _, c := range strings.Split(name, "/") {
		p = filepath.Join(p, c)
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&os.ModeSymlink != 0 {
			return "", false
		}
	}
	fi, err := os.Lstat(p)
	return p, err == nil && (fi.IsDir() || fi.Mode().IsRegular())
}
