package cli

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// boxFolderPrefix names the folders made for upstreams that start in an
// empty folder of their own (no cwd), in the temporary folder.
const boxFolderPrefix = "toolgate-box-"

// boxLockMark is what newBoxFolder writes in a box folder's lock, the
// whole file: the mark of this layout (TMP/toolgate-box-XXX/{lock,root}).
// Releases before it ran the upstream in TMP/toolgate-box-XXX itself, so
// a file named lock there may be one the upstream of a gateway of such a
// release, still running beside this one during an upgrade, wrote in its
// working folder (a lock file of its own: a common name, free of any
// flock); the sweep removes no folder whose lock does not hold this mark.
const boxLockMark = "toolgate box folder lock 1\n"

// newBoxFolder makes the empty working folder of an upstream with no cwd,
// TMP/toolgate-box-XXX/root, beside a file lock that this process holds
// locked (flock) until release removes them: the box shows root only, so
// the upstream cannot touch the lock. A gateway killed before release
// leaves the folder, its lock free; the next start removes it
// (sweepBoxFolders). The lock is made under another name and renamed
// once locked, so that no sweep ever finds it free while this process
// lives; it holds boxLockMark, written first.
func newBoxFolder() (root string, release func(), err error) {
	dir, err := os.MkdirTemp("", boxFolderPrefix)
	if err != nil {
		return "", nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "lock.new"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		_, err = f.WriteString(boxLockMark)
	}
	if err == nil {
		if err = lockFolder(f, true); err == nil || errors.Is(err, errors.ErrUnsupported) {
			err = os.Rename(filepath.Join(dir, "lock.new"), filepath.Join(dir, "lock"))
		}
	}
	if err == nil {
		err = os.Mkdir(filepath.Join(dir, "root"), 0o700)
	}
	release = func() {
		os.RemoveAll(dir) // the lock still held: no sweep sees it free
		if f != nil {
			f.Close()
		}
	}
	if err != nil {
		release()
		return "", nil, err
	}
	return filepath.Join(dir, "root"), release, nil
}

// sweepBoxFolders removes the folders of newBoxFolder in tmp whose
// gateway is gone, and returns them: only folders of this user, not
// links, holding a lock file (a regular file, not a link) that holds
// boxLockMark and is free. A folder whose lock is held (a live gateway),
// missing, unreadable or without the mark (an older release's working
// folder, or a lock newBoxFolder had not finished) is left: nothing proves
// it a box folder whose owner is gone.
func sweepBoxFolders(tmp string) (removed []string) {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return nil
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), boxFolderPrefix) || !e.IsDir() {
			continue
		}
		dir := filepath.Join(tmp, e.Name())
		if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() || !ownedByUser(fi) {
			continue
		}
		// noBlock: a FIFO named lock would block the open (and the
		// gateway's start) until something writes to it.
		f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDONLY|noFollow|noBlock, 0)
		if err != nil {
			continue
		}
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && ownedByUser(fi) && marked(f) && lockFolder(f, false) == nil {
			if os.RemoveAll(dir) == nil {
				removed = append(removed, dir)
			}
		}
		f.Close()
	}
	return removed
}

// marked reports whether the file f holds boxLockMark and nothing else.
func marked(f *os.File) bool {
	b := make([]byte, len(boxLockMark)+1)
	n, err := io.ReadFull(f, b)
	return (err == nil || err == io.ErrUnexpectedEOF) && string(b[:n]) == boxLockMark
}
