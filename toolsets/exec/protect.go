package exec

import (
	"os"
	"path/filepath"
)

// protectedNames are entries at the top of the workspace that a command must
// not change, because something outside the sandbox runs what they say
// later: git's folder (hooks, config with core.fsmonitor/core.hooksPath,
// submodule gitdirs under .git/modules), editor and agent settings that run
// tasks when the folder is opened, and shell start-up files. They match the
// write-protected paths of the file tools (toolsets/fs DefaultRules), so a
// command cannot do what write_file is refused. Like Codex's workspace-write
// mode, .git is read-only as a whole: git status and log work, git commit
// inside the sandbox does not.
var protectedNames = []string{
	".git", ".gitmodules", ".gitconfig",
	".vscode", ".idea", ".devcontainer", ".claude", ".cursor", ".gemini", ".codex", ".windsurf", ".continue", ".zed", ".mcp.json",
	".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases", ".profile",
	".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout", ".cshrc", ".tcshrc", ".kshrc", ".login", ".logout", ".inputrc",
	".toolgate",
}

// protectedMounts returns the protected entries that exist in root, to be
// mounted read-only over the writable workspace. A symbolic link is never
// listed: the sandbox would mount what it points to, perhaps a folder
// outside the workspace. An entry that does not exist cannot be covered by
// a mount (creating it would change the workspace); the command check
// (CheckShell) still refuses the plain spellings of such writes.
func protectedMounts(root string) []string {
	var out []string
	for _, n := range protectedNames {
		p := filepath.Join(root, n)
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&os.ModeSymlink != 0 || !(fi.IsDir() || fi.Mode().IsRegular()) {
			continue
		}
		out = append(out, p)
	}
	return out
}
