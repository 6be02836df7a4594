package sandbox

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// openNoFollow opens path (absolute), as seen from the folder dir ("/",
// or the host's root while a new one is built), as an O_PATH file, one
// component at a time and following no link. A spec's paths were resolved
// by the caller (links and all) before they were sent: a link met here
// was made since, by something that can write the folder that holds it —
// another command racing this one, swapping a granted folder for a link
// to one outside — and is refused. The grant then is exactly the file
// that was checked, never what a link points to now.
func openNoFollow(dir, path string) (int, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for _, c := range strings.Split(path, "/") {
		if c == "" {
			continue
		}
		if c == "." || c == ".." {
			unix.Close(fd)
			return -1, fmt.Errorf("%s: not a resolved path", path)
		}
		next, err := unix.Openat(fd, c, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, fmt.Errorf("%s: %w", path, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(next, &st); err != nil {
			unix.Close(next)
			return -1, fmt.Errorf("%s: %w", path, err)
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			unix.Close(next)
			return -1, fmt.Errorf("%s: %s became a link after the grant was checked (refused: the grant is the folder that was checked, not where a link points now)", path, c)
		}
		fd = next
	}
	return fd, nil
}
