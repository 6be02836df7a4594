//go:build linux

package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestGrantSwappedForLink: a granted folder inside the workspace that
// something keeps swapping for a link to a folder outside it (as a command
// running beside this one can) never gives a command the outside folder:
// each command sees the folder as it was checked, sees no grant at all, or
// is refused — under the native, the reduced and the bwrap sandbox (review
// S2: the grant was resolved, then opened again by its name, following the
// link; 19 in 60 native and 7 in 60 reduced commands read the outside file,
// and 6 in 33 bwrap commands, which bound the grant by its name; then 1 in
// 28 bwrap commands still did: bwrap resolves a --bind source, even
// /proc/self/fd/N, to a name and binds that name, so the grants go by
// --bind-fd, which bwrap checks is the file it mounted).
func TestGrantSwappedForLink(t *testing.T) {
	for _, c := range []struct {
		name    string
		backend Backend
	}{{"native", &Native{}}, {"reduced", &Reduced{}}, {"bwrap", &Bwrap{}}} {
		t.Run(c.name, func(t *testing.T) {
			ws, outside := t.TempDir(), t.TempDir()
			os.WriteFile(filepath.Join(outside, "key"), []byte("OUTSIDE"), 0o644)
			git := filepath.Join(ws, ".git")
			os.Mkdir(git, 0o755)
			os.WriteFile(filepath.Join(git, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
			stop := swapping(func() {
				os.Rename(git, git+".real")
				os.Symlink(outside, git)
				time.Sleep(100 * time.Microsecond)
				os.Remove(git)
				os.Rename(git+".real", git)
				time.Sleep(time.Millisecond) // a folder most of the time: most commands run
			})
			// Until 40 commands ran (most are refused while the machine is
			// loaded and the swapper runs often), at most 400 tries.
			tries, ran, leaked := 0, 0, 0
			for ; ran < 40 && tries < 400; tries++ {
				o, err := c.backend.Run(context.Background(), Spec{Shell: "cat .git/key 2>/dev/null; cat " + filepath.Join(outside, "key") + " 2>/dev/null; true",
					Root: ws, ReadOnly: []string{git}, Writable: []string{}})
				if err != nil {
					continue // refused: the grant changed as it was set up
				}
				ran++
				if strings.Contains(string(o.Stdout), "OUTSIDE") {
					leaked++
				}
			}
			stop()
			if leaked > 0 {
				t.Fatalf("%d of %d commands read the folder outside through a swapped grant", leaked, ran)
			}
			if ran == 0 {
				t.Fatal("no command ran at all")
			}
			t.Logf("%d of %d commands ran, none reached the outside folder", ran, tries)
		})
	}
}

// swapping runs step in a loop on a goroutine of its own until the
// returned function is called (which waits for it).
func swapping(step func()) func() {
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			step()
		}
	}()
	return func() { close(stop); <-done }
}

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
// the next swap puts back). A refused bwrap box must not run either:
// killing bwrap alone let its sandbox process, held at --block-fd and not
// yet bound to bwrap's life, go on to the command (1 box in a -race run).
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
			stop := swapping(func() { unix.Renameat2(unix.AT_FDCWD, pkg, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE) })
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
					t.Logf("a box wrote into the grant (inode %s); its mount points' inodes:\n%s", ino, o.Stdout)
				}
			}
			stop()
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
