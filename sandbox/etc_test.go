//go:build linux

package sandbox

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCopyEtcFile: what the sandbox's /etc shows of each kind of host file.
func TestCopyEtcFile(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	content := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*7 + i/251)
		}
		return b
	}
	type want struct {
		content []byte // a file with this content
		link    string // or a link to this
		none    bool   // or nothing
	}
	cases := map[string]struct {
		make func(path string) error
		want want
	}{
		"empty":        {func(p string) error { return os.WriteFile(p, nil, 0o644) }, want{content: []byte{}}},
		"small":        {func(p string) error { return os.WriteFile(p, []byte("root:x:0:0::/root:/bin/sh\n"), 0o644) }, want{content: []byte("root:x:0:0::/root:/bin/sh\n")}},
		"page":         {func(p string) error { return os.WriteFile(p, content(4096), 0o644) }, want{content: content(4096)}},
		"larger":       {func(p string) error { return os.WriteFile(p, content(300_001), 0o600) }, want{content: content(300_001)}},
		"just under":   {func(p string) error { return os.WriteFile(p, content(maxEtcFile-1), 0o644) }, want{content: content(maxEtcFile - 1)}},
		"too large":    {func(p string) error { return os.WriteFile(p, content(maxEtcFile), 0o644) }, want{none: true}},
		"link":         {func(p string) error { return os.Symlink("/usr/share/zoneinfo/Etc/UTC", p) }, want{link: "/usr/share/zoneinfo/Etc/UTC"}},
		"relative":     {func(p string) error { return os.Symlink("../run/resolv.conf", p) }, want{link: "../run/resolv.conf"}},
		"dangling":     {func(p string) error { return os.Symlink("nowhere", p) }, want{link: "nowhere"}},
		"folder":       {func(p string) error { return os.Mkdir(p, 0o755) }, want{none: true}},
		"fifo":         {func(p string) error { return unix.Mkfifo(p, 0o644) }, want{none: true}},
		"socket-like":  {func(p string) error { return unix.Mknod(p, unix.S_IFSOCK|0o644, 0) }, want{none: true}},
		"absent":       {func(p string) error { return nil }, want{none: true}},
		"link to fifo": {func(p string) error { return os.Symlink(filepath.Join(src, "fifo"), p) }, want{link: filepath.Join(src, "fifo")}},
	}
	for name, c := range cases {
		must(t, c.make(filepath.Join(src, name)))
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			d := filepath.Join(dst, name)
			must(t, copyEtcFile(filepath.Join(src, name), d))
			fi, err := os.Lstat(d)
			switch {
			case c.want.none:
				if err == nil {
					t.Fatalf("copied: %v", fi.Mode())
				}
			case c.want.link != "":
				if got, err := os.Readlink(d); err != nil || got != c.want.link {
					t.Fatalf("link %q, %v", got, err)
				}
			default:
				got, err := os.ReadFile(d)
				if err != nil || !bytes.Equal(got, c.want.content) || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o444 != 0o444 {
					t.Fatalf("%d bytes (want %d), mode %v, %v", len(got), len(c.want.content), fi.Mode(), err)
				}
			}
		})
	}
	// A file that exists already in the sandbox's /etc is an error, not
	// overwritten.
	if err := copyEtcFile(filepath.Join(src, "small"), filepath.Join(dst, "small")); err == nil {
		t.Fatal("copied over an existing file")
	}
}
