//go:build linux

package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestReadOnlyGrantSwapped: a read-only grant inside the workspace
// (pkg/.git) whose parent folder something keeps exchanging with a link
// to another folder of the workspace that has a .git too (renameat2
// RENAME_EXCHANGE in a loop, as a process writing the workspace beside
// the box can) is never writable in a box that granted it: the box has
// it read-only, or is refused. Which folder a box granted is what its
// mounts hold (Native resolves a grant once, following links, so a box
// may grant other/.git instead, and pkg/.git is then no grant of it).
// Native and bwrap mounted a grant on its place by name, following the
// link met there: the read-only mount covered other/.git and pkg/.git
// stayed writable in the workspace (native 2 of 30 boxes that granted
// it, as native's flags were set by name too and refused most; bwrap 8
// of 15: its inode check after the mount looks the name up again, which
// the next swap puts back).
func TestReadOnlyGrantSwapped(t *testing.T) {
	for _, c := range []struct {
		name    string
		backend Backend
	}{{"native", &Native{}}, {"bwrap", &Bwrap{}}} {
		t.Run(c.name, func(t *testing.T) {
			ws := t.TempDir()
			pkg, link, git := filepath.Join(ws, "pkg"), filepath.Join(ws, "plink"), filepath.Join(ws, "pkg", ".git")
			os.MkdirAll(git, 0o755)
			os.MkdirAll(filepath.Join(ws, "other", ".git"), 0o755)
			if err := os.Symlink("other", link); err != nil {
				t.Fatal(err)
			}
			// The grant's folder, whatever its name at a given moment.
			real, err := os.Open(git)
			if err != nil {
				t.Fatal(err)
			}
			defer real.Close()
			var st unix.Stat_t
			if err := unix.Fstat(int(real.Fd()), &st); err != nil {
				t.Fatal(err)
			}
			ino := strconv.FormatUint(st.Ino, 10)
			stop, done := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(done)
				for {
					select {
					case <-stop:
						return
					default:
					}
					unix.Renameat2(unix.AT_FDCWD, pkg, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE)
				}
			}()
			// Each box writes into the folder by both names, then prints
			// the inode of each of its mount points.
			cmd := `for d in pkg plink; do echo x > $d/.git/pwned; done 2>/dev/null
cut -d' ' -f5 /proc/self/mountinfo | while read m; do stat -c %i "$m"; done 2>/dev/null; true`
			tries, ran, granted, wrote := 0, 0, 0, 0
			for ; granted < 30 && tries < 400; tries++ {
				o, err := c.backend.Run(context.Background(), Spec{Shell: cmd, Root: ws, ReadOnly: []string{git}, Writable: []string{}})
				w := unix.Unlinkat(int(real.Fd()), "pwned", 0) == nil
				if err != nil {
					continue // refused: the grant changed as it was set up
				}
				ran++
				if !strings.Contains("\n"+string(o.Stdout), "\n"+ino+"\n") {
					continue // the folder was not what it granted
				}
				granted++
				if w {
					wrote++
				}
			}
			close(stop)
			<-done
			if wrote > 0 {
				t.Fatalf("%d of %d boxes that granted the folder read-only wrote into it", wrote, granted)
			}
			if ran == 0 {
				t.Fatalf("no box ran in %d tries", tries)
			}
			t.Logf("%d of %d tries ran, %d granted the folder, none could write it", ran, tries, granted)
		})
	}
}
