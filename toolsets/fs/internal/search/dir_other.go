//go:build !linux

package search

import (
	"os"
	"sync/atomic"
)

// dir is an open folder of the walk, shared by the jobs of its entries and
// closed when the last of them is done. Each folder is its own os.Root, so a
// file opens by its single name.
type dir struct {
	refs atomic.Int32
	root *os.Root
}

func openTop(root *os.Root, name string) (*dir, error) {
	r, err := root.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	d := &dir{root: r}
	d.refs.Store(1)
	return d, nil
}

func (d *dir) release() {
	if d.refs.Add(-1) == 0 {
		d.root.Close()
	}
}

func (d *dir) sub(name string) (*dir, error) { return openTop(d.root, name) }

func (d *dir) list(*[]byte) ([]entry, error) {
	f, err := d.root.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	des, err := f.ReadDir(-1)
	entries := make([]entry, 0, len(des))
	for _, de := range des {
		t := de.Type()
		if !t.IsDir() && !t.IsRegular() && t&os.ModeSymlink == 0 {
			t = os.ModeIrregular
		}
		entries = append(entries, entry{name: de.Name(), typ: t})
	}
	return entries, err
}

func (d *dir) read(name string, w *worker) ([]byte, readStatus) {
	f, err := openFile(d.root, name)
	if err != nil {
		return nil, readFailed
	}
	defer f.Close()
	return w.read(f)
}
