package trust

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Hashes keeps the SHA-256 of the files Identify hashed in a file of its
// own (JSON, mode 0600, replaced atomically), so that a gateway that
// starts again does not read node's 120 MB again (a tenth of a second of
// CPU or more at each start). A file's kept hash is given only while
// the file is the one that was hashed: the same device, inode, size,
// modification and change time (nanoseconds; the change time is the
// kernel's, set at every write, rename or utimes, and no program can set
// it back); any difference, a kept file that is damaged, not a regular
// file of this user's alone: the file is
// hashed again. A file changed less than a few seconds before it is
// hashed is not kept: on a file system with coarse times a second change
// within the same tick would not show. A nil *Hashes keeps nothing.
type Hashes struct {
	Path string
}

// keptHash is one kept hash and the file's identity when it was taken.
type keptHash struct {
	Key    fileKey `json:"key"`
	SHA256 string  `json:"sha256"`
}

// maxKept bounds the hashes kept: beyond it the file starts afresh.
const maxKept = 256

// recentChange is how recent a change keeps a file's hash from being kept.
const recentChange = 3 * time.Second

// sum returns the SHA-256 of the file at path, kept or taken now.
func (h *Hashes) sum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	before, keyed := statKey(f)
	var kept map[string]keptHash
	if h != nil && keyed {
		kept = h.read()
		if k, ok := kept[path]; ok && k.Key == before && len(k.SHA256) == sha256.Size*2 {
			return k.SHA256, nil
		}
	}
	sum, err := hashOpen(f, path)
	if err != nil || h == nil || !keyed {
		return sum, err
	}
	// Kept only when the file did not change while it was read, nor
	// just before.
	if after, ok := statKey(f); !ok || after != before || time.Since(before.changed()) < recentChange {
		return sum, nil
	}
	if kept == nil || len(kept) >= maxKept {
		kept = map[string]keptHash{}
	}
	kept[path] = keptHash{Key: before, SHA256: sum}
	h.write(kept)
	return sum, nil
}

// read returns the kept hashes; none when the file is missing, damaged or
// not this user's alone.
func (h *Hashes) read() map[string]keptHash {
	f, err := os.Open(h.Path)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || !ownedAlone(fi) {
		return nil
	}
	var kept map[string]keptHash
	if json.NewDecoder(io.LimitReader(f, 1<<20)).Decode(&kept) != nil {
		return nil
	}
	return kept
}

// write replaces the kept hashes (a file written beside and renamed over
// it, 0600); a failure keeps nothing, which only costs a hash next time.
func (h *Hashes) write(kept map[string]keptHash) {
	b, err := json.Marshal(kept)
	if err != nil || os.MkdirAll(filepath.Dir(h.Path), 0o700) != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(h.Path), "."+filepath.Base(h.Path)+".*")
	if err != nil {
		return
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil && cerr == nil {
		os.Rename(tmp.Name(), h.Path)
	}
}

// hashOpen hashes the open file f (at most maxHashed bytes).
func hashOpen(f *os.File, path string) (string, error) {
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, maxHashed+1))
	if err != nil {
		return "", err
	}
	if n > maxHashed {
		return "", fmt.Errorf("%s is larger than %d bytes", path, maxHashed)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
