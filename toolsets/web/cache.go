package web

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate/internal/atomicfile"
)

// cache keeps the last response of each GET in a folder: one JSON file per
// request (URL and request headers), written atomically, the folder capped
// in size by removing the oldest files.
type cache struct {
	dir      string
	maxBytes int64
	mu       sync.Mutex // one writer and evictor at a time
}

// entry is a cached response.
type entry struct {
	Response Response  `json:"response"`
	StoredAt time.Time `json:"stored_at"`
}

const cacheExt = ".json"

func newCache(dir string, maxBytes int64) (*cache, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("web: cache folder: %w", err)
	}
	return &cache{dir: dir, maxBytes: maxBytes}, nil
}

// key names the request: its URL and its headers, so that a response
// fetched with one set of credentials never answers another.
func cacheKey(u string, h http.Header) string {
	sum := sha256.New()
	io.WriteString(sum, "GET "+u+"\n")
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		for _, v := range h[k] {
			fmt.Fprintf(sum, "%s: %s\n", k, v)
		}
	}
	return hex.EncodeToString(sum.Sum(nil))
}

func (c *cache) path(key string) string { return filepath.Join(c.dir, key+cacheExt) }

// get returns the entry for key, if there is a readable one.
func (c *cache) get(key string) (entry, bool) {
	f, err := os.Open(c.path(key))
	if err != nil {
		return entry{}, false
	}
	defer f.Close()
	var e entry
	if err := json.NewDecoder(io.LimitReader(f, c.maxBytes)).Decode(&e); err != nil {
		return entry{}, false
	}
	return e, true
}

// put stores e under key: a temporary file, synced, renamed into place;
// then the folder is brought back under its cap.
func (c *cache) put(key string, e entry) error {
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if int64(len(data)) > c.maxBytes {
		return fmt.Errorf("a response of %d bytes does not fit a cache of %d", len(data), c.maxBytes)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := atomicfile.Write(c.path(key), data, 0o600); err != nil {
		return err
	}
	return c.evict(key)
}

// evict removes the oldest entries (never keep) until the folder fits.
func (c *cache) evict(keep string) error {
	des, err := os.ReadDir(c.dir)
	if err != nil {
		return err
	}
	type file struct {
		name string
		size int64
		mod  time.Time
	}
	var files []file
	var total int64
	for _, de := range des {
		if !de.Type().IsRegular() || !strings.HasSuffix(de.Name(), cacheExt) {
			continue
		}
		info, err := de.Info()
		if err != nil {
			continue
		}
		files = append(files, file{de.Name(), info.Size(), info.ModTime()})
		total += info.Size()
	}
	slices.SortFunc(files, func(a, b file) int { return a.mod.Compare(b.mod) })
	var errs []error
	for _, f := range files {
		if total <= c.maxBytes {
			break
		}
		if f.name == keep+cacheExt {
			continue
		}
		if err := os.Remove(filepath.Join(c.dir, f.name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		total -= f.size
	}
	return errors.Join(errs...)
}
