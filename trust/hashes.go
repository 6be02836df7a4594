package trust

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Hashes keeps the SHA-256 of the files Identify hashed in a file of its
// own (JSON, mode 0600, written by atomicfile), so that a gateway that
// starts again does not read node's 120 MB again (a tenth of a second of
// CPU or more at each start). A hash is kept only when no one could have
// changed the file unseen, and given again only while the file is the one
// that was hashed: the same device, inode, size, modification and change
// time (nanoseconds). Linux only, and only on a file system whose inode
// numbers and times are the kernel's own (keptFS: ext2/3/4, xfs, btrfs,
// tmpfs). The hash is taken under a read lease (F_SETLEASE): refused
// while anyone holds the file open for writing, a writable shared mapping
// included (whose writes to a page already dirty change neither time),
// and broken by anyone who opens it for writing meanwhile; no lease, a
// broken one or a different key after the hash: the hash is not kept. A
// lease needs the file to be the gateway's user's or CAP_LEASE (root): a
// gateway that is not root keeps no hash of a file it does not own (node
// under /usr), which costs the hash at each start. Nor is a hash kept
// whose file changed less than recentChange before the hash ended (as
// git's racy timestamps: a write within the same tick of a coarse clock
// would not show). Any doubt, a kept file that is damaged, larger than
// maxKeptFile, not a regular file of this user's alone, or a kept hash
// that is not 64 lowercase hex digits: the file is hashed again. A nil
// *Hashes keeps nothing. The hash is taken from the opened file, the one
// whose key is compared. The kept file is read once, at the first hash a
// Hashes is asked for (a start hashes every upstream's executable and
// files); what others write to it later is not given, only kept when this
// Hashes writes the file (write). Safe for concurrent use.
type Hashes struct {
	Path string

	mu   sync.Mutex
	kept map[string]keptHash // as read from Path, and those kept since; nil: Path not read yet
}

// keptHash is one kept hash and the file's identity when it was taken.
type keptHash struct {
	Key    fileKey `json:"key"`
	SHA256 string  `json:"sha256"`
}

// maxKept bounds the hashes kept: beyond it the file starts afresh.
const maxKept = 256

// maxKeptFile bounds the kept file read: a larger one is ignored and
// written afresh.
const maxKeptFile = 1 << 20

// recentChange is how recent a change keeps a file's hash from being
// kept: above the coarsest time of the file systems keptFS allows (ext2/3
// with small inodes: a second).
const recentChange = 3 * time.Second

// sum returns the SHA-256 of the file at path, kept or taken now.
func (h *Hashes) sum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	before, keyed := statKey(f)
	if h == nil || !keyed {
		return hashOpen(f, path)
	}
	h.mu.Lock()
	if h.kept == nil {
		h.kept = h.read()
	}
	k, ok := h.kept[path]
	h.mu.Unlock()
	if ok && k.Key == before {
		return k.SHA256, nil
	}
	release, leased := readLease(f)
	if !leased {
		return hashOpen(f, path)
	}
	sum, err := hashOpen(f, path)
	after, keyed := statKey(f)
	if held := release(); err != nil || !held || !keyed || after != before || time.Since(before.changed()) < recentChange {
		return sum, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.kept) >= maxKept {
		h.kept = map[string]keptHash{}
	}
	h.kept[path] = keptHash{Key: before, SHA256: sum}
	h.write(path)
	return sum, nil
}

// read returns the kept hashes whose value is a SHA-256 in lowercase hex;
// none (an empty map, not nil) when the file is missing, damaged, larger
// than maxKeptFile or not this user's alone.
func (h *Hashes) read() map[string]keptHash {
	none := map[string]keptHash{}
	f, err := os.Open(h.Path)
	if err != nil {
		return none
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || !ownedAlone(fi) || fi.Size() > maxKeptFile {
		return none
	}
	var kept map[string]keptHash
	if json.NewDecoder(io.LimitReader(f, maxKeptFile)).Decode(&kept) != nil || kept == nil {
		return none
	}
	for path, k := range kept {
		if !isSHA256Hex(k.SHA256) {
			delete(kept, path)
		}
	}
	return kept
}

// isSHA256Hex reports whether s is a SHA-256 as hashOpen writes it.
func isSHA256Hex(s string) bool {
	if len(s) != sha256.Size*2 {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// write writes the kept file again with the hash of path just kept (the
// caller holds h.mu): under the file's lock (withLock) it reads the file
// again and adds what this Hashes kept that the file lacks, and path's
// hash, so the hashes other processes kept since h read it are not lost;
// more than maxKept: h's alone. Written as the pin file is (writeAtomic);
// a failure keeps nothing, which only costs a hash next time.
func (h *Hashes) write(path string) {
	withLock(h.Path, func() error {
		kept := h.read()
		for p, k := range h.kept {
			if _, ok := kept[p]; !ok || p == path {
				kept[p] = k
			}
		}
		if len(kept) > maxKept {
			kept = h.kept
		}
		b, err := json.Marshal(kept)
		if err != nil {
			return err
		}
		return writeAtomic(h.Path, b)
	})
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
