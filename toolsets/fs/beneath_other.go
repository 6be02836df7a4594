//go:build !linux

package fs

import "io"

// openBeneath is Linux's fast open (openat2); elsewhere every read takes
// the walk.
func (s *Set) openBeneath(string) (Location, io.ReadCloser, int64, bool) {
	return Location{}, nil, 0, false
}
