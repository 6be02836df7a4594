package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// A debPackage is one downloaded Debian package.
type debPackage struct {
	Name, Version, Arch string
	File                string // the .deb
}

// apt runs apt-get for one architecture with a state of its own under
// dir: the host's sources and keys, but its own package lists, cache and
// (empty) list of installed packages, so it downloads any architecture's
// packages as any user and changes nothing of the host's apt.
type apt struct {
	arch, dir string
}

func newApt(cache, arch string) (*apt, error) {
	a := &apt{arch: arch, dir: filepath.Join(cache, "apt", arch)}
	for _, d := range []string{"lists/partial", "archives/partial"} {
		if err := os.MkdirAll(filepath.Join(a.dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(a.dir, "status"), nil, 0o644); err != nil {
		return nil, err
	}
	return a, nil
}

func (a *apt) run(dir string, args ...string) (string, error) {
	opts := []string{
		"-o", "APT::Architecture=" + a.arch, "-o", "APT::Architectures::=" + a.arch,
		"-o", "Dir::State=" + a.dir, "-o", "Dir::State::Lists=" + filepath.Join(a.dir, "lists"),
		"-o", "Dir::State::status=" + filepath.Join(a.dir, "status"),
		"-o", "Dir::Cache=" + a.dir, "-o", "Dir::Cache::archives=" + filepath.Join(a.dir, "archives"),
		"-o", "Debug::NoLocking=1", "-o", "Acquire::Languages=none", "-o", "APT::Sandbox::User=" + currentUser(),
		"-o", "APT::Install-Recommends=false", "-o", "Dir::Etc::Preferences=/dev/null", "-o", "Dir::Etc::PreferencesParts=/dev/null",
	}
	return command(dir, []string{"DEBIAN_FRONTEND=noninteractive"}, "apt-get", append(opts, args...)...)
}

// currentUser is the user apt downloads as: this one (apt's own _apt user
// could not write into a cache this user owns).
func currentUser() string {
	if out, err := exec.Command("id", "-un").Output(); err == nil {
		return strings.TrimSpace(string(out))
	}
	return "root"
}

// update refreshes the package lists when they are missing or older than
// maxAge, so two builds in a row resolve the same versions.
func (a *apt) update(maxAge time.Duration) error {
	stampFile := filepath.Join(a.dir, "updated")
	if fi, err := os.Stat(stampFile); err == nil && time.Since(fi.ModTime()) < maxAge {
		return nil
	}
	if _, err := a.run("", "update", "-qq"); err != nil {
		return fmt.Errorf("apt-get update for %s: %w", a.arch, err)
	}
	return os.WriteFile(stampFile, nil, 0o644)
}

var instLine = regexp.MustCompile(`^Inst (\S+) \((\S+) .*\[(\S+)\]\)`)

// install downloads names and everything they depend on (not what they
// recommend), as installing them on an empty system would, and returns
// the packages, sorted by name.
func (a *apt) install(names []string) ([]debPackage, error) {
	sim, err := a.run("", append([]string{"install", "-s", "-y"}, names...)...)
	if err != nil {
		return nil, fmt.Errorf("apt-get cannot resolve %s for %s: %w", strings.Join(names, " "), a.arch, err)
	}
	if _, err := a.run("", append([]string{"install", "-qq", "-y", "--download-only"}, names...)...); err != nil {
		return nil, fmt.Errorf("apt-get cannot download %s for %s: %w", strings.Join(names, " "), a.arch, err)
	}
	var pkgs []debPackage
	sc := bufio.NewScanner(strings.NewReader(sim))
	for sc.Scan() {
		m := instLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		p := debPackage{Name: m[1], Version: m[2], Arch: m[3]}
		p.File = filepath.Join(a.dir, "archives", fmt.Sprintf("%s_%s_%s.deb", p.Name, strings.ReplaceAll(p.Version, ":", "%3a"), p.Arch))
		if _, err := os.Stat(p.File); err != nil {
			return nil, fmt.Errorf("apt-get downloaded %s %s but %w", p.Name, p.Version, err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("apt-get resolved nothing for %s: %s", a.arch, sim)
	}
	sort.Slice(pkgs, func(i, j int) bool { return pkgs[i].Name < pkgs[j].Name })
	return pkgs, nil
}

// unpack adds a package's files to t, as dpkg would lay them out on a
// merged-/usr system (Debian's layout since 12: /bin is /usr/bin), without
// running its maintainer scripts. keep, when not nil, chooses files by
// their final name.
func unpack(t *tree, p debPackage, keep func(name string) bool) error {
	cmd := exec.Command("dpkg-deb", "--fsys-tarfile", p.File)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("dpkg-deb (Debian's dpkg package): %w", err)
	}
	from := p.Name + " " + p.Version
	err = t.readTar(out, from, func(h *tar.Header) bool {
		orig := h.Name
		h.Name = usrMerged(h.Name)
		switch h.Typeflag {
		case tar.TypeLink:
			h.Linkname = usrMerged(h.Linkname)
		case tar.TypeSymlink:
			if orig != h.Name && !path.IsAbs(h.Linkname) {
				h.Linkname = path.Join("/", path.Dir(orig), h.Linkname) // it moved: name what it named
			}
		}
		return keep == nil || keep(h.Name)
	})
	if werr := cmd.Wait(); err == nil && werr != nil {
		err = fmt.Errorf("dpkg-deb --fsys-tarfile %s: %w: %s", p.File, werr, strings.TrimSpace(stderr.String()))
	}
	return err
}

// mergedDirs are the top folders that are links into /usr on a merged-/usr
// system.
var mergedDirs = []string{"bin", "lib", "lib32", "lib64", "libx32", "sbin"}

func usrMerged(name string) string {
	top, _, _ := strings.Cut(name, "/")
	for _, d := range mergedDirs {
		if top == d {
			return "usr/" + name
		}
	}
	return name
}

// linkMerged adds /bin → usr/bin and the others whose /usr folder exists.
func linkMerged(t *tree) error {
	for _, d := range mergedDirs {
		if _, ok := t.files["usr/"+d]; ok {
			if err := t.symlink(d, "usr/"+d); err != nil {
				return err
			}
		}
	}
	return nil
}

// caBundle concatenates the certificates the ca-certificates package ships
// (in t), sorted by name, as its update-ca-certificates makes
// /etc/ssl/certs/ca-certificates.crt.
func caBundle(t *tree) ([]byte, error) {
	var names []string
	for n, e := range t.files {
		if strings.HasPrefix(n, "usr/share/ca-certificates/") && strings.HasSuffix(n, ".crt") && e.hdr.Typeflag == tar.TypeReg {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no certificate under /usr/share/ca-certificates (is ca-certificates unpacked?)")
	}
	sort.Strings(names)
	var b bytes.Buffer
	for _, n := range names {
		b.Write(bytes.TrimRight(t.files[n].data, "\n"))
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}
