//go:build linux

package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/policy"
)

// guardedAt is what launch looks at in the write grant w when an
// upstream starts.
func guardedAt(w string) ([]autoRunEntry, error) {
	r, err := os.OpenRoot(w)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cs, err := grantConfigs(r)
	if err != nil {
		return nil, err
	}
	return guardedAutoRun(w, r, cs)
}

// configsAt is grantConfigs of the write grant w, opened as launch opens
// it; the grant stays open for the test.
func configsAt(t *testing.T, w string) (*os.Root, []policy.ConfigPath, error) {
	t.Helper()
	r, err := os.OpenRoot(w)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	cs, err := grantConfigs(r)
	return r, cs, err
}

func mustMissing(t *testing.T, w string) []autoRunEntry {
	t.Helper()
	m, err := guardedAt(w)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestAutoRunUnreadable: an upstream that makes its grant, or a folder on
// the way to an auto-run entry, unreadable (chmod 0: it owns them) after
// planting does not get a clean look: each is a finding that counts as
// refused, and a grant that cannot be read when the upstream starts
// refuses the start. Root reads through chmod 0, so the looks run in a
// child of the test as nobody.
func TestAutoRunUnreadable(t *testing.T) {
	if dir := os.Getenv("TOOLGATE_TEST_UNREADABLE"); dir != "" {
		unreadableChild(dir)
		return
	}
	dir := t.TempDir()
	os.Chmod(filepath.Dir(dir), 0o755) // t.TempDir's own folder is root's alone
	os.Chmod(dir, 0o777)
	self, err := os.ReadFile(os.Args[0]) // the test binary's folder is root's alone
	if err != nil {
		t.Fatal(err)
	}
	child := filepath.Join(dir, "cli.test")
	if err := os.WriteFile(child, self, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(child, "-test.run", "^TestAutoRunUnreadable$", "-test.v")
	cmd.Env = append(os.Environ(), "TOOLGATE_TEST_UNREADABLE="+dir, "TOOLGATE_STATE="+filepath.Join(dir, "state"))
	if os.Getuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "CHILD OK") {
		t.Fatalf("%v\n%s", err, out)
	}
}

// unreadableChild runs TestAutoRunUnreadable's looks; it prints CHILD OK
// when each holds, and what failed otherwise.
func unreadableChild(dir string) {
	fail := func(f string, a ...any) {
		os.Stdout.WriteString("FAIL: " + fmt.Sprintf(f, a...) + "\n")
		os.Exit(1)
	}
	work := filepath.Join(dir, "work")
	os.MkdirAll(work, 0o755)
	missing, err := guardedAt(work)
	if err != nil {
		fail("%v", err)
	}
	var seq int
	quarantine := filepath.Join(dir, "quarantine")
	// .envrc planted, then the grant made unreadable.
	os.WriteFile(filepath.Join(work, ".envrc"), []byte("evil\n"), 0o644)
	os.Chmod(work, 0)
	got := planted(missing, quarantine, &seq)
	if len(got) == 0 || !got[0].unchecked || !strings.Contains(got[0].rule(), "could not be checked") {
		fail("a grant made unreadable gave %+v", got)
	}
	if _, err := guardedAt(work); err == nil {
		fail("an unreadable grant was taken as checked at start")
	}
	os.Chmod(work, 0o755)
	// .config/git/config planted, then .config made unreadable.
	os.MkdirAll(filepath.Join(work, ".config", "git"), 0o755)
	os.WriteFile(filepath.Join(work, ".config", "git", "config"), []byte("evil\n"), 0o644)
	os.Chmod(filepath.Join(work, ".config"), 0)
	got = planted(missing, quarantine, &seq)
	var unchecked, moved bool
	for _, m := range got {
		unchecked = unchecked || m.unchecked && m.target == filepath.Join(work, ".config")
		moved = moved || m.target == filepath.Join(work, ".envrc") && m.err == nil
	}
	if !unchecked || !moved {
		fail("want .config unchecked and .envrc moved, got %+v", got)
	}
	os.Chmod(filepath.Join(work, ".config"), 0o755)
	os.Stdout.WriteString("CHILD OK\n")
}

// TestAutoRunLinkOutOfGrant: an upstream that makes W/.config a link to
// the user's own ~/.config inside its write grant gets the link moved to
// quarantine (as a link) and audited; the user's files behind it are
// neither moved nor removed, whether the quarantine is on the grant's file
// system (rename) or on another one (copy, then remove). A link that was
// there before the upstream is the user's and stays; a link that stays
// inside the grant is followed there.
func TestAutoRunLinkOutOfGrant(t *testing.T) {
	other, err := os.MkdirTemp("/dev/shm", "toolgate-quarantine-") // another file system than the temp folder, where there is one
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(other) })
	for _, quarantine := range []string{filepath.Join(t.TempDir(), "quarantine"), filepath.Join(other, "quarantine")} {
		dir := t.TempDir()
		home, work := filepath.Join(dir, "home"), filepath.Join(dir, "work")
		userFile := filepath.Join(home, ".config", "git", "config")
		for p, c := range map[string]string{userFile: "[user]\n\tname = me\n", filepath.Join(home, ".config", "other"): "kept\n", filepath.Join(work, "README"): "work\n"} {
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		missing := mustMissing(t, work)
		// The upstream, inside its grant: .config → the user's ~/.config.
		if err := os.Symlink(filepath.Join(home, ".config"), filepath.Join(work, ".config")); err != nil {
			t.Fatal(err)
		}
		var seq int
		moved := planted(missing, quarantine, &seq)
		if b, err := os.ReadFile(userFile); err != nil || string(b) != "[user]\n\tname = me\n" {
			t.Fatalf("quarantine %s: the user's %s was touched: %q %v", quarantine, userFile, b, err)
		}
		if _, err := os.Stat(filepath.Join(home, ".config", "other")); err != nil {
			t.Errorf("the user's ~/.config/other is gone: %v", err)
		}
		if len(moved) != 1 || moved[0].target != filepath.Join(work, ".config") || !moved[0].link || moved[0].err != nil {
			t.Fatalf("want the link .config moved (once, as a link), got %+v", moved)
		}
		if _, err := os.Lstat(filepath.Join(work, ".config")); err == nil {
			t.Errorf("the link is still in the grant")
		}
		if target, err := os.Readlink(moved[0].to); err != nil || target != filepath.Join(home, ".config") {
			t.Errorf("the quarantine holds %s → %q (%v), want the link itself", moved[0].to, target, err)
		}
		if r := moved[0].rule(); !strings.Contains(r, "a link made inside the write grant") || !strings.Contains(r, "moved to "+moved[0].to) {
			t.Errorf("rule: %s", r)
		}
		if again := planted(missing, quarantine, &seq); len(again) != 0 {
			t.Errorf("a second look moved %+v", again)
		}

		// The user's own link, there when the upstream started, stays.
		if err := os.Symlink(filepath.Join(home, ".config"), filepath.Join(work, ".config")); err != nil {
			t.Fatal(err)
		}
		if got := planted(mustMissing(t, work), quarantine, &seq); len(got) != 0 {
			t.Errorf("the user's link was moved: %+v", got)
		}
		os.Remove(filepath.Join(work, ".config"))

		// A link that stays inside the grant is followed inside it: the
		// entry planted behind it is moved, the link stays.
		missing = mustMissing(t, work)
		os.MkdirAll(filepath.Join(work, "dots", "git"), 0o755)
		os.WriteFile(filepath.Join(work, "dots", "git", "config"), []byte("[core]\n\tfsmonitor = evil\n"), 0o644)
		os.Symlink("dots", filepath.Join(work, ".config"))
		moved = planted(missing, quarantine, &seq)
		if len(moved) != 1 || moved[0].link || moved[0].err != nil {
			t.Fatalf("want .config/git (behind an inner link) moved, got %+v", moved)
		}
		if _, err := os.Lstat(filepath.Join(work, "dots", "git")); err == nil {
			t.Errorf("the planted git folder is still in the grant")
		}
		if b, err := os.ReadFile(filepath.Join(moved[0].to, "config")); err != nil || !strings.Contains(string(b), "fsmonitor") {
			t.Errorf("the quarantined copy: %q %v", b, err)
		}
		if _, err := os.Lstat(filepath.Join(work, ".config")); err != nil {
			t.Errorf("the inner link was moved: %v", err)
		}
	}
}

// TestCopyTreeKeepsLinks: a planted folder holding a link out of the grant
// is copied with the link as a link: what it points to is not copied.
func TestCopyTreeKeepsLinks(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	os.WriteFile(secret, []byte("secret\n"), 0o600)
	work := filepath.Join(dir, "work")
	os.MkdirAll(filepath.Join(work, ".vscode"), 0o755)
	os.WriteFile(filepath.Join(work, ".vscode", "tasks.json"), []byte("{}\n"), 0o644)
	os.Symlink(secret, filepath.Join(work, ".vscode", "leak"))
	root, err := os.OpenRoot(work)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	dst := filepath.Join(dir, "q", ".vscode")
	os.MkdirAll(filepath.Dir(dst), 0o700)
	if err := copyTree(root, ".vscode", dst); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "tasks.json")); err != nil || string(b) != "{}\n" {
		t.Errorf("tasks.json: %q %v", b, err)
	}
	if fi, err := os.Lstat(filepath.Join(dst, "leak")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was not kept as a link: %v %v", fi, err)
	}
}

// TestAutoRunWatchRemadeFolder: a folder on the way to a nested entry that
// is removed and made again is watched again (its watch is dropped by
// descriptor when it goes), so .config/git planted in the new .config is
// moved out, with no help from the tick.
func TestAutoRunWatchRemadeFolder(t *testing.T) {
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	if err := os.MkdirAll(filepath.Join(work, ".config"), 0o755); err != nil {
		t.Fatal(err)
	}
	missing := mustMissing(t, work)
	checked := make(chan []autoRunMoved, 100)
	var seq int
	stop, err := watchAutoRunEvery(missing, func() { checked <- planted(missing, filepath.Join(dir, "quarantine"), &seq) }, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	<-checked // the first look, at start
	if err := os.Remove(filepath.Join(work, ".config")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(work, ".config"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A look after the new .config appeared: the watcher has looked at the
	// folders to watch before it.
	for done := false; !done; {
		<-checked
		_, err := os.Stat(filepath.Join(work, ".config"))
		done = err == nil
	}
	drain(checked)
	if err := os.Mkdir(filepath.Join(work, ".config", "git"), 0o755); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(time.Minute) // a bound on the wait, not a timed assertion
	for {
		select {
		case moved := <-checked:
			for _, m := range moved {
				if m.target == filepath.Join(work, ".config", "git") && m.err == nil {
					if _, err := os.Lstat(m.target); err == nil {
						t.Fatalf("moved, yet still there")
					}
					return
				}
			}
		case <-deadline:
			t.Fatal(".config/git made in a re-made .config was never seen (the watch of the old .config kept its path)")
		}
	}
}

// drain empties c of what is already in it.
func drain[T any](c chan T) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

// TestAutoRunLinkRemadeOnSameInode: a person's link on the way to an
// auto-run entry, there when the upstream started (W/.config → their
// ~/.config), that the upstream removes and makes again pointing elsewhere
// (a folder it can write, holding a planted git config) is not taken for
// the person's own even when the file system gives the new link the old
// one's inode (ext4 does at once): it is moved out (review R8).
func TestAutoRunLinkRemadeOnSameInode(t *testing.T) {
	dir := t.TempDir()
	home, work, elsewhere := filepath.Join(dir, "home"), filepath.Join(dir, "work"), filepath.Join(dir, "elsewhere")
	for _, d := range []string{filepath.Join(home, ".config"), work, filepath.Join(elsewhere, "git")} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(elsewhere, "git", "config"), []byte("[core]\n\tfsmonitor = evil\n"), 0o644)
	link := filepath.Join(work, ".config")
	if err := os.Symlink(filepath.Join(home, ".config"), link); err != nil {
		t.Fatal(err)
	}
	var before syscall.Stat_t
	syscall.Lstat(link, &before)
	missing := mustMissing(t, work)
	var seq int
	if got := planted(missing, filepath.Join(dir, "quarantine"), &seq); len(got) != 0 {
		t.Fatalf("the person's own link was moved: %+v", got)
	}
	os.Remove(link)
	if err := os.Symlink(elsewhere, link); err != nil {
		t.Fatal(err)
	}
	var after syscall.Stat_t
	syscall.Lstat(link, &after)
	t.Logf("the new link's inode is the old one's: %v", after.Ino == before.Ino)
	moved := planted(missing, filepath.Join(dir, "quarantine"), &seq)
	if len(moved) != 1 || moved[0].target != link || !moved[0].link || moved[0].err != nil {
		t.Fatalf("want the remade link moved, got %+v", moved)
	}
	if _, err := os.Lstat(link); err == nil {
		t.Errorf("the remade link is still in the grant")
	}
}

// TestQuarantineCopyBound: a planted entry copied into quarantine (the
// quarantine on another file system: no rename) is copied up to the
// bound (maxQuarantineBytes, maxQuarantineEntries) and removed from the
// grant all the same; its record says that only a part was kept (review
// R7: a planted folder of any size was copied whole into the state
// folder).
func TestQuarantineCopyBound(t *testing.T) {
	other, err := os.MkdirTemp("/dev/shm", "toolgate-quarantine-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(other) })
	for _, c := range []struct {
		name  string
		plant func(vscode string)
	}{
		{"bytes", func(vscode string) {
			os.WriteFile(filepath.Join(vscode, "tasks.json"), make([]byte, maxQuarantineBytes+4096), 0o644)
		}},
		{"entries", func(vscode string) {
			for i := range maxQuarantineEntries + 10 {
				os.WriteFile(filepath.Join(vscode, fmt.Sprintf("f%d", i)), nil, 0o644)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			work := t.TempDir()
			missing := mustMissing(t, work)
			vscode := filepath.Join(work, ".vscode")
			os.Mkdir(vscode, 0o755)
			c.plant(vscode)
			var seq int
			moved := planted(missing, filepath.Join(other, c.name), &seq)
			if len(moved) != 1 || moved[0].err != nil || !moved[0].partial {
				t.Fatalf("want .vscode removed with a partial copy, got %+v", moved)
			}
			if _, err := os.Lstat(vscode); err == nil {
				t.Errorf("the planted .vscode is still in the grant")
			}
			entries, size := 0, int64(0)
			filepath.Walk(moved[0].to, func(_ string, fi os.FileInfo, err error) error {
				if err == nil {
					entries++
					if fi.Mode().IsRegular() {
						size += fi.Size()
					}
				}
				return nil
			})
			if entries > maxQuarantineEntries || size > maxQuarantineBytes+1 {
				t.Errorf("the quarantine holds %d entries, %d bytes", entries, size)
			}
			if r := moved[0].rule(); !strings.Contains(r, "removed") || !strings.Contains(r, "first part") {
				t.Errorf("rule: %s", r)
			}
		})
	}
}

// TestAutoRunNested: below the top of a write grant, the configuration a
// program reads in a folder found by what it holds (review 6, W7) is
// guarded too: a package's existing .npmrc is mounted read-only, and a
// pip.conf planted in a virtual environment, whatever its name, is moved
// out; the same names in a folder that is neither are left alone.
func TestAutoRunNested(t *testing.T) {
	work := t.TempDir()
	for p, c := range map[string]string{
		"env/pyvenv.cfg": "home = /usr/bin\n", "pkg/package.json": `{"name":"pkg"}`, "pkg/.npmrc": "fund=false\n",
		"docs/readme.md": "docs\n",
	} {
		os.MkdirAll(filepath.Join(work, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(work, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, cs, err := configsAt(t, work)
	if err != nil {
		t.Fatal(err)
	}
	if ro := autoRunEntries(work, cs); !slices.Contains(ro, filepath.Join(work, "pkg", ".npmrc")) {
		t.Errorf("read-only entries %v, want pkg/.npmrc", ro)
	}
	missing := mustMissing(t, work)
	for _, rel := range []string{"env/pip.conf", "docs/pip.conf"} {
		if err := os.WriteFile(filepath.Join(work, rel), []byte("[global]\nindex-url = http://index.example.test/\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var seq int
	moved := planted(missing, filepath.Join(t.TempDir(), "quarantine"), &seq)
	if len(moved) != 1 || moved[0].target != filepath.Join(work, "env", "pip.conf") || moved[0].err != nil {
		t.Fatalf("moved %+v, want env/pip.conf alone", moved)
	}
	if _, err := os.Lstat(filepath.Join(work, "env", "pip.conf")); err == nil {
		t.Error("the planted pip.conf is still in the virtual environment")
	}
	if _, err := os.Stat(filepath.Join(work, "docs", "pip.conf")); err != nil {
		t.Errorf("a pip.conf outside a virtual environment was moved: %v", err)
	}
}

// TestAutoRunNestedRenamed: a nested entry mounted read-only (a package's
// .npmrc) whose folder the upstream renames and makes again with an .npmrc
// of its own (review 12, T4: the mount covers the entry, not its folder,
// and host tools read the name) is caught by device and inode: the
// newcomer is moved out and said as a replacement; the entry as mounted,
// in its place or renamed away with its folder, is never moved.
func TestAutoRunNestedRenamed(t *testing.T) {
	work := t.TempDir()
	os.MkdirAll(filepath.Join(work, "pkg"), 0o755)
	os.WriteFile(filepath.Join(work, "pkg", "package.json"), []byte(`{"name":"pkg"}`), 0o644)
	os.WriteFile(filepath.Join(work, "pkg", ".npmrc"), []byte("fund=false\n"), 0o644)
	guarded := mustMissing(t, work)
	quarantine := filepath.Join(t.TempDir(), "quarantine")
	var seq int
	if moved := planted(guarded, quarantine, &seq); len(moved) != 0 {
		t.Fatalf("the mounted entry in its place was moved: %+v", moved)
	}
	if err := os.Rename(filepath.Join(work, "pkg"), filepath.Join(work, "pkg-old")); err != nil {
		t.Fatal(err)
	}
	if moved := planted(guarded, quarantine, &seq); len(moved) != 0 {
		t.Fatalf("nothing in the name yet, moved %+v", moved)
	}
	os.MkdirAll(filepath.Join(work, "pkg"), 0o755)
	os.WriteFile(filepath.Join(work, "pkg", ".npmrc"), []byte("registry=http://evil.example.test/\n"), 0o644)
	moved := planted(guarded, quarantine, &seq)
	if len(moved) != 1 || moved[0].target != filepath.Join(work, "pkg", ".npmrc") || moved[0].err != nil {
		t.Fatalf("moved %+v, want the new pkg/.npmrc", moved)
	}
	if r := moved[0].rule(); !strings.Contains(r, "was replaced") {
		t.Errorf("rule: %s", r)
	}
	if _, err := os.Lstat(filepath.Join(work, "pkg", ".npmrc")); err == nil {
		t.Error("the planted .npmrc is still where npm reads it")
	}
	if b, err := os.ReadFile(moved[0].to); err != nil || !strings.Contains(string(b), "evil") {
		t.Errorf("quarantine holds %q %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(work, "pkg-old", ".npmrc")); err != nil || string(b) != "fund=false\n" {
		t.Errorf("the mounted entry, renamed away: %q %v", b, err)
	}
}

// TestAutoRunWorkspace: the box guards the .npmrc of every package folder
// the grant declares as a workspace, at any depth (policy.
// NestedConfigPaths), not only one level down: an existing one is
// mounted read-only, one planted in a declared package (directly, or
// through a link to a package folder inside the grant) is moved out, and
// the link pointed elsewhere by the upstream is moved out. A declaration
// that cannot be expanded (braces, a package link out of the grant)
// refuses the start, saying what to fix.
func TestAutoRunWorkspace(t *testing.T) {
	work := t.TempDir()
	for p, c := range map[string]string{
		"package.json":              `{"workspaces": ["packages/*"]}`,
		"packages/app/package.json": "{}", "packages/app/.npmrc": "fund=false\n",
		"packages/web/package.json": "{}", "lib/shared/package.json": "{}",
		"evil/package.json": "{}", "evil/.npmrc": "script-shell=./x\n",
	} {
		os.MkdirAll(filepath.Join(work, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(work, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../lib/shared", filepath.Join(work, "packages", "linked")); err != nil {
		t.Fatal(err)
	}
	_, cs, err := configsAt(t, work)
	if err != nil {
		t.Fatal(err)
	}
	if ro := autoRunEntries(work, cs); !slices.Contains(ro, filepath.Join(work, "packages", "app", ".npmrc")) {
		t.Errorf("read-only entries %v, want packages/app/.npmrc", ro)
	}
	missing := mustMissing(t, work)
	quarantine := filepath.Join(t.TempDir(), "quarantine")
	var seq int
	if moved := planted(missing, quarantine, &seq); len(moved) != 0 {
		t.Fatalf("nothing planted yet, moved %+v", moved)
	}
	for _, rel := range []string{"packages/web/.npmrc", "packages/linked/.npmrc"} {
		if err := os.WriteFile(filepath.Join(work, rel), []byte("registry=http://index.example.test/\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var targets []string
	for _, m := range planted(missing, quarantine, &seq) {
		if m.err != nil {
			t.Errorf("%s: %v", m.target, m.err)
		}
		targets = append(targets, m.target)
	}
	slices.Sort(targets)
	if want := []string{filepath.Join(work, "lib/shared/.npmrc"), filepath.Join(work, "packages/web/.npmrc")}; !slices.Equal(targets, want) {
		t.Errorf("moved %v, want %v", targets, want)
	}
	// The link pointed at a folder of the upstream's with its own .npmrc.
	os.Remove(filepath.Join(work, "packages", "linked"))
	if err := os.Symlink("../evil", filepath.Join(work, "packages", "linked")); err != nil {
		t.Fatal(err)
	}
	moved := planted(missing, quarantine, &seq)
	if len(moved) != 1 || moved[0].target != filepath.Join(work, "packages", "linked") || !strings.Contains(moved[0].rule(), "pointed elsewhere or replaced") || !strings.Contains(moved[0].rule(), "the link was made again") {
		t.Fatalf("moved %+v, want the link packages/linked moved out and made again", moved)
	}
	if target, err := os.Readlink(filepath.Join(work, "packages", "linked")); err != nil || target != "../lib/shared" {
		t.Errorf("the link reads %q (%v), want the person's ../lib/shared back", target, err)
	}
	if moved := planted(missing, quarantine, &seq); len(moved) != 0 {
		t.Errorf("the link made again was taken for another: moved %+v", moved)
	}
	// Replaced by a folder of the upstream's with its own .npmrc: the
	// folder goes, the link comes back, again.
	os.Remove(filepath.Join(work, "packages", "linked"))
	os.MkdirAll(filepath.Join(work, "packages", "linked"), 0o755)
	if err := os.WriteFile(filepath.Join(work, "packages", "linked", ".npmrc"), []byte("registry=http://index.example.test/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	moved = planted(missing, quarantine, &seq)
	if len(moved) != 1 || moved[0].err != nil || moved[0].putBack != nil {
		t.Fatalf("moved %+v, want the folder packages/linked", moved)
	}
	if target, err := os.Readlink(filepath.Join(work, "packages", "linked")); err != nil || target != "../lib/shared" {
		t.Errorf("after a folder: the link reads %q (%v), want ../lib/shared", target, err)
	}

	for _, c := range []struct{ decl, link, want string }{
		{`{"workspaces": ["packages/{a,b}"]}`, "", "fix " + "%s/package.json"},
		{`{"workspaces": ["packages/*"]}`, "/etc", "make %s/packages/out a folder, or a relative link"},
	} {
		w := t.TempDir()
		os.MkdirAll(filepath.Join(w, "packages"), 0o755)
		os.WriteFile(filepath.Join(w, "package.json"), []byte(c.decl), 0o644)
		if c.link != "" {
			os.Symlink(c.link, filepath.Join(w, "packages", "out"))
		}
		_, _, err := configsAt(t, w)
		if err == nil {
			t.Fatalf("%s: no error", c.decl)
		}
		if msg := grantError("up", w, err).Error(); !strings.Contains(msg, fmt.Sprintf(c.want, w)) || !strings.Contains(msg, "upstream up") {
			t.Errorf("%s: %s, want it to say %q", c.decl, msg, fmt.Sprintf(c.want, w))
		}
	}
}

// TestAutoRunLinkChanged: a package link retargeted between the look at
// the grant's configuration and the watch refuses the start, naming the
// link: the watch would otherwise keep the new target as the upstream's
// own and guard the .npmrc of the old folder.
func TestAutoRunLinkChanged(t *testing.T) {
	work := t.TempDir()
	for p, c := range map[string]string{
		"package.json": `{"workspaces": ["packages/*"]}`, "lib/app/package.json": "{}", "evil/package.json": "{}",
	} {
		os.MkdirAll(filepath.Join(work, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(work, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(work, "packages", "app")
	os.MkdirAll(filepath.Dir(link), 0o755)
	if err := os.Symlink("../lib/app", link); err != nil {
		t.Fatal(err)
	}
	root, cs, err := configsAt(t, work)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := guardedAutoRun(work, root, cs); err != nil {
		t.Fatalf("the link unchanged: %v", err)
	}
	os.Remove(link)
	if err := os.Symlink("../evil", link); err != nil {
		t.Fatal(err)
	}
	var we *policy.WorkspaceError
	if m, err := guardedAutoRun(work, root, cs); !errors.As(err, &we) || we.Link != "packages/app" {
		t.Fatalf("retargeted: %+v %v, want a WorkspaceError naming packages/app", m, err)
	}
}

// TestAutoRunWatchesOnce: a package folder one level down that is also
// declared, and one reached through two links, are each watched once.
func TestAutoRunWatchesOnce(t *testing.T) {
	work := t.TempDir()
	for p, c := range map[string]string{
		"package.json": `{"workspaces": ["pkg", "packages/*"]}`, "pkg/package.json": "{}", "lib/app/package.json": "{}",
	} {
		os.MkdirAll(filepath.Join(work, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(work, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(work, "packages"), 0o755)
	for _, l := range []string{"a", "b"} {
		if err := os.Symlink("../lib/app", filepath.Join(work, "packages", l)); err != nil {
			t.Fatal(err)
		}
	}
	n := map[string]int{}
	for _, e := range mustMissing(t, work) {
		n[e.rel]++
	}
	for _, rel := range []string{"pkg/.npmrc", "lib/app/.npmrc", "packages/a", "packages/b"} {
		if got := n[filepath.FromSlash(rel)]; got != 1 {
			t.Errorf("%s watched %d times, want once", rel, got)
		}
	}
}

// TestAutoRunLinkIntoAnotherGrant: a link at the top of a write grant
// into another write grant, deeper than its first level (lib ->
// OTHER/deep/pkg, absolute; venv -> ../other/deep/env, relative), makes
// the configuration of the folder it leads to the first grant's too
// (npm in work/lib reads lib/.npmrc), though neither grant's own look
// guards it: the .npmrc there is mounted read-only, a pip.conf planted in
// the virtual environment is moved out, and the link pointed elsewhere is
// moved out and made again. A link to a folder no grant holds adds
// nothing; one into a grant with config: true refuses the start.
func TestAutoRunLinkIntoAnotherGrant(t *testing.T) {
	top := t.TempDir()
	work, other, outside := filepath.Join(top, "work"), filepath.Join(top, "other"), filepath.Join(top, "outside")
	for p, c := range map[string]string{
		"other/deep/pkg/package.json": "{}", "other/deep/pkg/.npmrc": "fund=false\n",
		"other/deep/env/pyvenv.cfg": "home = /usr/bin\n",
		"other/evil/package.json":   "{}", "other/evil/.npmrc": "script-shell=./x\n",
		"outside/pkg/package.json": "{}", "work/readme.md": "work\n",
	} {
		os.MkdirAll(filepath.Join(top, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(top, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{"lib": filepath.Join(other, "deep", "pkg"), "venv": "../other/deep/env", "ext": filepath.Join(outside, "pkg")}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(work, name)); err != nil {
			t.Fatal(err)
		}
	}
	iso := &isolation{upstream: "up", write: []string{work, other}, config: map[string]bool{}}
	configs, roots, err := guardedConfigs("up", iso)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, r := range roots {
			r.Close()
		}
	})
	npmrc := filepath.Join(other, "deep", "pkg", ".npmrc")
	if ro := autoRunEntries(other, configs[other]); !slices.Contains(ro, npmrc) {
		t.Errorf("read-only entries of %s: %v, want %s (reached from %s/lib)", other, ro, npmrc, work)
	}
	for _, c := range configs[work] {
		if strings.HasPrefix(c.Name, "ext/") {
			t.Errorf("a link to a folder no grant holds added %s", c.Name)
		}
	}
	var missing []autoRunEntry
	for _, w := range iso.write {
		m, err := guardedAutoRun(w, roots[w], configs[w])
		if err != nil {
			t.Fatal(err)
		}
		missing = append(missing, m...)
	}
	quarantine := filepath.Join(t.TempDir(), "quarantine")
	var seq int
	if moved := planted(missing, quarantine, &seq); len(moved) != 0 {
		t.Fatalf("nothing planted yet, moved %+v", moved)
	}
	pipConf := filepath.Join(other, "deep", "env", "pip.conf")
	if err := os.WriteFile(pipConf, []byte("[global]\nindex-url = http://index.example.test/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if moved := planted(missing, quarantine, &seq); len(moved) != 1 || moved[0].target != pipConf || moved[0].err != nil {
		t.Fatalf("moved %+v, want %s alone", moved, pipConf)
	}
	// lib pointed at a folder of the upstream's with its own .npmrc.
	lib := filepath.Join(work, "lib")
	os.Remove(lib)
	if err := os.Symlink(filepath.Join(other, "evil"), lib); err != nil {
		t.Fatal(err)
	}
	moved := planted(missing, quarantine, &seq)
	if len(moved) != 1 || moved[0].target != lib || moved[0].err != nil || moved[0].putBack != nil {
		t.Fatalf("moved %+v, want the link %s moved out and made again", moved, lib)
	}
	if target, err := os.Readlink(lib); err != nil || target != links["lib"] {
		t.Errorf("the link reads %q (%v), want the person's %s back", target, err, links["lib"])
	}
	if moved := planted(missing, quarantine, &seq); len(moved) != 0 {
		t.Errorf("the link made again was taken for another: moved %+v", moved)
	}

	iso.config[other] = true
	if _, _, err := guardedConfigs("up", iso); err == nil || !strings.Contains(err.Error(), "upstream up: the link "+lib) || !strings.Contains(err.Error(), "config: true") {
		t.Errorf("a link into a grant with config: true: %v, want a refusal naming the link", err)
	}
}

// TestAutoRunLinkIntoNestedGrants: with nested write grants (outer, and
// outer/inner below it), a link at the top of a third grant into
// outer/inner/pkg is judged by the innermost grant that holds the folder
// (re-read s44's F14): the package's .npmrc is guarded in inner alone,
// whatever outer says; inner with config: true refuses the start naming
// it; outer with config: true does not, inner guarding the folder.
func TestAutoRunLinkIntoNestedGrants(t *testing.T) {
	top := t.TempDir()
	work, outer := filepath.Join(top, "work"), filepath.Join(top, "outer")
	inner := filepath.Join(outer, "inner")
	for p, c := range map[string]string{
		"outer/inner/pkg/package.json": "{}", "outer/inner/pkg/.npmrc": "fund=false\n", "work/readme.md": "work\n",
	} {
		os.MkdirAll(filepath.Join(top, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(top, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lib := filepath.Join(work, "lib")
	if err := os.Symlink(filepath.Join(inner, "pkg"), lib); err != nil {
		t.Fatal(err)
	}
	npmrc := filepath.Join(inner, "pkg", ".npmrc")
	for _, c := range []struct {
		name         string
		outerConfig  bool
		innerConfig  bool
		refusedNamed string // "": started
	}{
		{"both guard", false, false, ""},
		{"outer config: true", true, false, ""},
		{"inner config: true", false, true, inner},
		{"both config: true", true, true, inner},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Both orders of the grants: the decision does not follow it.
			for _, write := range [][]string{{work, outer, inner}, {inner, outer, work}} {
				iso := &isolation{upstream: "up", write: write, config: map[string]bool{outer: c.outerConfig, inner: c.innerConfig}}
				configs, roots, err := guardedConfigs("up", iso)
				for _, r := range roots {
					r.Close()
				}
				if c.refusedNamed != "" {
					if err == nil || !strings.Contains(err.Error(), "the link "+lib) || !strings.Contains(err.Error(), "in its write grant "+c.refusedNamed+",") {
						t.Errorf("grants %v: %v, want a refusal naming the link and %s", write, err, c.refusedNamed)
					}
					continue
				}
				if err != nil {
					t.Fatalf("grants %v: %v", write, err)
				}
				if ro := autoRunEntries(inner, configs[inner]); !slices.Contains(ro, npmrc) {
					t.Errorf("grants %v: read-only entries of %s: %v, want %s", write, inner, ro, npmrc)
				}
				for _, e := range configs[outer] {
					if strings.HasPrefix(e.Name, "inner/") {
						t.Errorf("grants %v: %s guarded in the outer grant %s too, not in the innermost alone", write, e.Name, outer)
					}
				}
				if !slices.ContainsFunc(configs[work], func(e policy.ConfigPath) bool { return e.Name == "lib" && len(e.Links) == 1 }) {
					t.Errorf("grants %v: the link %s is not kept in %s: %+v", write, lib, work, configs[work])
				}
			}
		})
	}
}
