package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// testOptions builds from this checkout into a temporary folder.
func testOptions(t *testing.T) options {
	t.Helper()
	o, err := newOptions(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestImage builds the images twice and checks the layouts (every digest
// and size, by go-containerregistry's validate), the platforms, configs,
// labels and user, that both builds give one digest, and runs the program
// and a few of the runner's tools from the extracted layers under
// bubblewrap.
func TestImage(t *testing.T) {
	o := testOptions(t)
	if err := buildImages(o); err != nil {
		t.Fatal(err)
	}
	again := o
	again.Out = t.TempDir()
	if err := buildImages(again); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"toolgate", "toolgate-runner"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(o.Out, "image", name)
			idx := checkLayout(t, o, dir)
			d1, err := idx.Digest()
			if err != nil {
				t.Fatal(err)
			}
			d2, err := checkLayout(t, o, filepath.Join(again.Out, "image", name)).Digest()
			if err != nil {
				t.Fatal(err)
			}
			if d1 != d2 {
				t.Errorf("two builds of one commit: %s and %s", d1, d2)
			}
			skopeo(t, o, dir, idx)
			root := extract(t, idx, "amd64")
			got := runIn(t, root, "/usr/bin/toolgate", "version", "--json")
			var v map[string]string
			if err := json.Unmarshal([]byte(got), &v); err != nil {
				t.Fatalf("toolgate version --json in the image: %v: %s", err, got)
			}
			if v["version"] != o.Stamp.Version || v["commit"] != o.Stamp.Commit || v["platform"] != "linux/amd64" {
				t.Errorf("toolgate version --json in the image = %v, want version %s commit %s on linux/amd64", v, o.Stamp.Version, o.Stamp.Commit)
			}
			passwd, err := os.ReadFile(filepath.Join(root, "etc/passwd"))
			if err != nil || !strings.Contains(string(passwd), "\ntoolgate:x:65532:65532:") {
				t.Errorf("/etc/passwd has no toolgate user 65532: %v\n%s", err, passwd)
			}
			for _, f := range []string{"etc/ssl/certs/ca-certificates.crt", "usr/share/zoneinfo/Europe/Paris", "usr/bin/toolgate-sandbox"} {
				if fi, err := os.Stat(filepath.Join(root, f)); err != nil || fi.Size() == 0 {
					t.Errorf("/%s is missing or empty: %v", f, err)
				}
			}
			arm := extract(t, idx, "arm64")
			if f, err := elf.Open(filepath.Join(arm, "usr/bin/toolgate")); err != nil || f.Machine != elf.EM_AARCH64 {
				t.Errorf("the arm64 image's toolgate is not an arm64 program: %v", err)
			} else {
				f.Close()
			}
			checkSBOM(t, o, filepath.Join(o.Out, "image", name+".spdx.json"), name == "toolgate-runner")
			if name == "toolgate-runner" {
				out := runIn(t, root, "/bin/sh", "-c", `id -u; git --version; python3 -c 'import ssl, sqlite3; print("python", 6*7)'; echo x | awk '{print "awk", $1}'; bwrap --version; ls /usr/bin/curl`)
				for _, want := range []string{"65532\n", "git version 2.", "python 42", "awk x", "bubblewrap 0.", "/usr/bin/curl"} {
					if !strings.Contains(out, want) {
						t.Errorf("the runner's tools printed no %q:\n%s", want, out)
					}
				}
				if _, err := os.Stat(filepath.Join(arm, "usr/lib/aarch64-linux-gnu/libc.so.6")); err != nil {
					t.Errorf("the arm64 runner has no arm64 C library: %v", err)
				}
			}
		})
	}
}

// checkLayout checks an image layout and returns the image index it names.
func checkLayout(t *testing.T, o options, dir string) v1.ImageIndex {
	t.Helper()
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].MediaType != types.OCIImageIndex || m.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != o.Stamp.Version {
		t.Fatalf("index.json names %+v, want one image index named %s", m.Manifests, o.Stamp.Version)
	}
	idx, err := top.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Index(idx); err != nil {
		t.Fatalf("the layout does not hold together: %v", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, d := range im.Manifests {
		platforms = append(platforms, d.Platform.String())
		if d.MediaType != types.OCIManifestSchema1 {
			t.Errorf("%s: media type %s", d.Platform, d.MediaType)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.OS+"/"+cfg.Architecture != d.Platform.OS+"/"+d.Platform.Architecture {
			t.Errorf("%s: the config says %s/%s", d.Platform, cfg.OS, cfg.Architecture)
		}
		if cfg.Config.User != "65532:65532" {
			t.Errorf("%s: user %q, want the numeric non-root 65532:65532", d.Platform, cfg.Config.User)
		}
		if !slices.Equal(cfg.Config.Entrypoint, []string{"/usr/bin/toolgate"}) || !cfg.Created.Time.Equal(o.Stamp.Time) {
			t.Errorf("%s: entrypoint %q created %s", d.Platform, cfg.Config.Entrypoint, cfg.Created)
		}
		for k, want := range map[string]string{
			"org.opencontainers.image.source":     "https://github.com/toolgate/toolgate",
			"org.opencontainers.image.version":    o.Stamp.Version,
			"org.opencontainers.image.revision":   o.Stamp.Commit,
			"io.modelcontextprotocol.server.name": "io.github.toolgate/toolgate",
		} {
			if got := cfg.Config.Labels[k]; got != want {
				t.Errorf("%s: label %s = %q, want %q", d.Platform, k, got, want)
			}
		}
	}
	sort.Strings(platforms)
	if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64/v8"}) {
		t.Errorf("platforms %v, want linux/amd64 and linux/arm64/v8", platforms)
	}
	return idx
}

// extract unpacks the arch image's layers into a new folder.
func extract(t *testing.T, idx v1.ImageIndex, arch string) string {
	t.Helper()
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var img v1.Image
	for _, d := range im.Manifests {
		if d.Platform.Architecture == arch {
			if img, err = idx.Image(d.Digest); err != nil {
				t.Fatal(err)
			}
		}
	}
	if img == nil {
		t.Fatalf("no %s image", arch)
	}
	root := t.TempDir()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return root
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(root, h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeSymlink:
			err = os.Symlink(h.Linkname, p)
		case tar.TypeLink:
			err = os.Link(filepath.Join(root, h.Linkname), p)
		case tar.TypeReg:
			var data []byte
			if data, err = io.ReadAll(tr); err == nil {
				err = os.WriteFile(p, data, os.FileMode(h.Mode)&0o777)
			}
		default:
			err = fmt.Errorf("type %c", h.Typeflag)
		}
		if err != nil {
			t.Fatalf("%s: %v", h.Name, err)
		}
	}
}

// runIn runs a program of an extracted image as its user, 65532, under
// bubblewrap, with the image as its whole file system.
func runIn(t *testing.T, root string, args ...string) string {
	t.Helper()
	for _, d := range []string{"proc", "dev"} { // the mount points a container runtime makes
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bw := append([]string{"--unshare-all", "--die-with-parent", "--uid", "65532", "--gid", "65532",
		"--ro-bind", root, "/", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--setenv", "PATH", "/usr/bin:/bin", "--"}, args...)
	out, err := exec.Command("bwrap", bw...).CombinedOutput()
	if err != nil {
		t.Fatalf("bwrap %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// checkSBOM checks that an SBOM names toolgate at this version, a Go module
// it links and (the runner's) Debian packages of both architectures.
func checkSBOM(t *testing.T, o options, file string, debian bool) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc sbom
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	purls := map[string]bool{}
	for _, p := range doc.Packages {
		for _, r := range p.ExternalRefs {
			purls[r.Locator[:strings.IndexAny(r.Locator+"@", "@")]] = true
		}
	}
	want := []string{"pkg:golang/github.com/toolgate/toolgate", "pkg:golang/github.com/spf13/cobra", "pkg:deb/debian/ca-certificates"}
	if debian {
		want = append(want, "pkg:deb/debian/git", "pkg:deb/debian/python3", "pkg:deb/debian/libc6")
	}
	for _, w := range want {
		if !purls[w] {
			t.Errorf("%s does not list %s", filepath.Base(file), w)
		}
	}
	if doc.SPDXVersion != "SPDX-2.3" || doc.Packages[0].VersionInfo != o.Stamp.Version {
		t.Errorf("%s: %s, toolgate %s", filepath.Base(file), doc.SPDXVersion, doc.Packages[0].VersionInfo)
	}
	if debian && !strings.Contains(string(data), "?arch=arm64") {
		t.Errorf("%s lists no arm64 Debian package", filepath.Base(file))
	}
}

// skopeo reads the layout as podman and a release pipeline would: the
// index by its name (the version), and a copy of the arm64 image, which
// verifies every blob it reads.
func skopeo(t *testing.T, o options, dir string, idx v1.ImageIndex) {
	t.Helper()
	ref := "oci:" + dir + ":" + o.Stamp.Version
	raw, err := exec.Command("skopeo", "inspect", "--raw", ref).Output()
	want, merr := idx.RawManifest()
	if err != nil || merr != nil || !bytes.Equal(bytes.TrimSpace(raw), bytes.TrimSpace(want)) {
		t.Errorf("skopeo inspect --raw %s: %v %v\n%s", ref, err, merr, raw)
	}
	if out, err := exec.Command("skopeo", "copy", "--quiet", "--override-arch", "arm64", ref, "dir:"+t.TempDir()).CombinedOutput(); err != nil {
		t.Errorf("skopeo copy --override-arch arm64 %s: %v\n%s", ref, err, out)
	}
}
