package fs

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestSymlinkSwapRace flips links between a target inside the root and one
// outside while reads and writes run through the tools: nothing outside may
// ever be read or written.
func TestSymlinkSwapRace(t *testing.T) {
	e := newEnv(t, Options{})
	outside := filepath.Join(e.parent, "outside")
	mustWrite(t, filepath.Join(outside, "victim.txt"), "OUTSIDE-SECRET victim\n")
	mustWrite(t, filepath.Join(e.ws, "real", "secret.txt"), "inside\n")
	mustWrite(t, filepath.Join(e.ws, "real", "victim.txt"), "inside victim\n")
	mustWrite(t, filepath.Join(e.ws, "realfile.txt"), "inside file\n")
	outsideBefore := snapshot(t, outside)
	parentBefore := snapshot(t, filepath.Join(e.parent, "home"))

	// Links: a folder link ("race") and a file link ("racefile"), each
	// flipped atomically (symlink to a temporary name, then rename) between
	// an inside and an outside target; relative targets, so that the outside
	// ones are caught by confinement, not by the absolute-link rule.
	flips := []struct{ link, in, out string }{
		{"race", "real", "../outside"},
		{"racefile", "realfile.txt", "../outside/secret.txt"},
		{"real/deep", "..", "../../outside"},
	}
	for _, f := range flips {
		if err := os.Symlink(f.in, filepath.Join(e.ws, f.link)); err != nil {
			t.Fatal(err)
		}
	}
	var stop atomic.Bool
	var flipper sync.WaitGroup
	var nflips atomic.Int64
	flipper.Add(1)
	go func() {
		defer flipper.Done()
		for i := 0; !stop.Load(); i++ {
			for _, f := range flips {
				target := f.in
				if i%2 == 1 {
					target = f.out
				}
				tmp := filepath.Join(e.ws, f.link+".flip")
				os.Remove(tmp)
				if err := os.Symlink(target, tmp); err == nil {
					os.Rename(tmp, filepath.Join(e.ws, f.link))
				}
			}
			nflips.Add(1)
		}
	}()

	calls := []struct {
		name string
		args string
	}{
		{"read_file", `{"path":"race/secret.txt"}`},
		{"read_file", `{"path":"racefile"}`},
		{"read_file", `{"path":"real/deep/secret.txt"}`},
		{"read_file", `{"path":"real/deep/race/secret.txt"}`},
		{"get_file_info", `{"path":"race/secret.txt"}`},
		{"list_directory", `{"path":"race"}`},
		{"write_file", `{"path":"race/new.txt","content":"x"}`},
		{"write_file", `{"path":"racefile","content":"overwritten\n"}`},
		{"write_file", `{"path":"real/deep/new2.txt","content":"x"}`},
		{"edit_file", `{"path":"race/victim.txt","edits":[{"old_string":"victim","new_string":"PWNED"}]}`},
		{"edit_file", `{"path":"racefile","edits":[{"old_string":"OUTSIDE","new_string":"PWNED"}]}`},
		{"create_directory", `{"path":"race/newdir"}`},
		{"move_file", `{"source":"race/victim.txt","destination":"moved.txt"}`},
		{"delete_file", `{"path":"race/victim.txt"}`},
	}
	const workers, rounds = 4, 150
	var wg sync.WaitGroup
	var ok, denied atomic.Int64
	var leak atomic.Value
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				for _, c := range calls {
					res, err := e.call(c.name, c.args)
					if err != nil {
						denied.Add(1)
					} else {
						ok.Add(1)
					}
					if strings.Contains(res.Text(), "OUTSIDE-SECRET") {
						leak.Store(c.name + " " + c.args + ": " + res.Text())
					}
				}
			}
		}()
	}
	wg.Wait()
	stop.Store(true)
	flipper.Wait()
	if l := leak.Load(); l != nil {
		t.Fatalf("content from outside the root was returned: %v", l)
	}
	// Put things back where the inside calls may have moved them, then
	// compare the outside tree.
	if got := snapshot(t, outside); got != outsideBefore {
		t.Fatalf("the folder outside the root changed:\nbefore:\n%s\nafter:\n%s", outsideBefore, got)
	}
	if got := snapshot(t, filepath.Join(e.parent, "home")); got != parentBefore {
		t.Fatalf("the home folder changed")
	}
	if ok.Load() == 0 || denied.Load() == 0 || nflips.Load() < 10 {
		t.Fatalf("the race did not exercise both outcomes: %d succeeded, %d denied, %d flips", ok.Load(), denied.Load(), nflips.Load())
	}
	t.Logf("%d calls succeeded inside, %d denied, %d flips, 0 escapes", ok.Load(), denied.Load(), nflips.Load())
}
