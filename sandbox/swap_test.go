//go:build linux

package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
			stop, done := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(done)
				for {
					select {
					case <-stop:
						return
					default:
					}
					os.Rename(git, git+".real")
					os.Symlink(outside, git)
					time.Sleep(100 * time.Microsecond)
					os.Remove(git)
					os.Rename(git+".real", git)
					time.Sleep(time.Millisecond) // a folder most of the time: most commands run
				}
			}()
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
			close(stop)
			<-done
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
