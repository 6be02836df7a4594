package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/toolgate/toolgate/policy"
)

// missingAutoRun returns the protected configuration entries
// (policy.ConfigPaths) that do not exist at the top of write grant w: a
// mount cannot cover them, so while the upstream runs a watcher moves any
// of them that appears out of the grant (watchAutoRun).
func missingAutoRun(w string) []autoRunEntry {
	var out []autoRunEntry
	for _, c := range policy.ConfigPaths() {
		p := filepath.Join(w, filepath.FromSlash(c.Name))
		if _, err := os.Lstat(p); err != nil {
			out = append(out, autoRunEntry{grant: w, path: p, reason: c.Reason})
		}
	}
	return out
}

// autoRunEntry is a protected entry missing from a write grant when the
// upstream started.
type autoRunEntry struct {
	grant, path, reason string
}

// planted moves the entries of missing that now exist into quarantine (a
// folder of its own under toolgate's state folder, made on first use) and
// returns, for each, the refusal to audit. An entry that cannot be moved
// is removed (after a copy into quarantine when the move crossed file
// systems).
func planted(missing []autoRunEntry, quarantine string, seq *int) []autoRunMoved {
	var out []autoRunMoved
	for _, m := range missing {
		if _, err := os.Lstat(m.path); err != nil {
			continue
		}
		*seq++
		dst := filepath.Join(quarantine, time.Now().UTC().Format("20060102T150405Z")+"-"+strconv.Itoa(*seq), filepath.Base(m.path))
		err := os.MkdirAll(filepath.Dir(dst), 0o700)
		if err == nil {
			if err = os.Rename(m.path, dst); err != nil {
				if err = copyTree(m.path, dst); err == nil {
					err = os.RemoveAll(m.path)
				}
			}
		}
		out = append(out, autoRunMoved{entry: m, to: dst, err: err})
	}
	return out
}

// autoRunMoved is one planted entry and where it went.
type autoRunMoved struct {
	entry autoRunEntry
	to    string
	err   error
}

// rule says what happened, for the audit record.
func (m autoRunMoved) rule() string {
	r := fmt.Sprintf("write: an auto-run entry created inside the write grant %s (%s); isolation.write {path, config: true} allows it", m.entry.grant, m.entry.reason)
	if m.err != nil {
		return r + "; it could not be moved away: " + m.err.Error()
	}
	return r + "; moved to " + m.to
}

// copyTree copies a file, a link (as a link) or a folder from src to dst.
func copyTree(src, dst string) error {
	return filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case fi.IsDir():
			return os.MkdirAll(to, 0o700)
		case fi.Mode().IsRegular():
			in, err := os.Open(p)
			if err != nil {
				return err
			}
			defer in.Close()
			out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, in); err != nil {
				out.Close()
				return err
			}
			return out.Close()
		}
		return nil // a socket or a device: not kept
	})
}
