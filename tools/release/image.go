package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	source     = "https://github.com/toolgate/toolgate"
	serverName = "io.github.toolgate/toolgate" // in the MCP registry
	// uid and gid of the images' user, toolgate: not root, and no user of
	// the host's (the number distroless images use for nonroot).
	userID = 65532
	home   = "home/toolgate"
	// packageList names the runner image's Debian packages.
	packageList = "deploy/image/toolgate-runner.packages"
)

// The architectures images are built for.
var imageArchs = []string{"amd64", "arm64"}

// An imageSpec is one image: its name, and its base for an architecture.
type imageSpec struct {
	name, description string
	packages          func(all []debPackage) []debPackage // the Debian packages it unpacks, of the runner's
	keep              func(name string) bool              // which of their files (nil: all)
	links             [][2]string                         // symbolic links the packages' scripts would make
}

// buildImages writes an OCI image layout for toolgate and toolgate-runner
// under o.Out/image/, with an SBOM beside each.
func buildImages(o options) error {
	tmp, err := os.MkdirTemp("", "toolgate-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	names, links, err := readPackageList(filepath.Join(o.Repo, packageList))
	if err != nil {
		return err
	}
	debs := map[string][]debPackage{}
	for _, arch := range imageArchs {
		a, err := newApt(o.Cache, arch)
		if err != nil {
			return err
		}
		if err := a.update(6 * time.Hour); err != nil {
			return err
		}
		if debs[arch], err = a.install(names); err != nil {
			return err
		}
		if err := goBuild(o, "linux", arch, filepath.Join(tmp, "bin", arch), toolgate, helper); err != nil {
			return err
		}
	}
	specs := []imageSpec{{
		name:        "toolgate",
		description: "toolgate, the tool layer for LLM agents: the program alone, on CA certificates and time zones",
		packages: func(all []debPackage) []debPackage {
			var base []debPackage
			for _, p := range all {
				if p.Name == "ca-certificates" || p.Name == "tzdata" {
					base = append(base, p)
				}
			}
			return base
		},
		keep: func(name string) bool {
			return strings.HasPrefix(name, "usr/share/zoneinfo/") || strings.HasPrefix(name, "usr/share/ca-certificates/")
		},
	}, {
		name:        "toolgate-runner",
		description: "toolgate with a shell, coreutils, git and Python for the commands it runs (serve, runner)",
		packages:    func(all []debPackage) []debPackage { return all },
		links:       links,
	}}
	for _, spec := range specs {
		if err := buildImage(o, spec, debs, tmp); err != nil {
			return fmt.Errorf("image %s: %w", spec.name, err)
		}
	}
	return nil
}

func buildImage(o options, spec imageSpec, debs map[string][]debPackage, tmp string) error {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	sbom := newSBOM(o, spec.name)
	for _, arch := range imageArchs {
		pkgs := spec.packages(debs[arch])
		base, err := baseTree(pkgs, spec)
		if err != nil {
			return err
		}
		bins := newTree()
		for _, p := range []string{toolgate, helper} {
			data, err := os.ReadFile(filepath.Join(tmp, "bin", arch, p))
			if err != nil {
				return err
			}
			if err := bins.file("usr/bin/"+p, 0o755, data); err != nil {
				return err
			}
		}
		var layers []mutate.Addendum
		for i, l := range []struct {
			t   *tree
			why string
		}{{base, "the base: " + describe(pkgs)}, {bins, "toolgate " + o.Stamp.Version + " (" + o.Stamp.Commit + ")"}} {
			file := filepath.Join(tmp, fmt.Sprintf("%s-%s-%d.tar", spec.name, arch, i))
			f, err := os.Create(file)
			if err != nil {
				return err
			}
			err = l.t.writeTar(f, o.Stamp.Time)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			layer, err := tarball.LayerFromFile(file, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
			if err != nil {
				return err
			}
			layers = append(layers, mutate.Addendum{Layer: layer, MediaType: types.OCILayer, History: v1.History{Created: v1.Time{Time: o.Stamp.Time}, CreatedBy: "tools/release: " + l.why}})
		}
		img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
		img, err = mutate.Append(img, layers...)
		if err != nil {
			return err
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			return err
		}
		cfg = cfg.DeepCopy()
		cfg.OS, cfg.Architecture, cfg.Variant = "linux", arch, variant(arch)
		cfg.Created = v1.Time{Time: o.Stamp.Time}
		cfg.Config = v1.Config{
			User:       fmt.Sprintf("%d:%d", userID, userID),
			Entrypoint: []string{"/usr/bin/toolgate"},
			Cmd:        []string{"serve"},
			Env: []string{
				"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
				"HOME=/" + home,
				"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
			},
			WorkingDir: "/" + home,
			Labels:     labels(o, spec),
		}
		if img, err = mutate.ConfigFile(img, cfg); err != nil {
			return err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: "linux", Architecture: arch, Variant: variant(arch)},
		}})
		sbom.addDebian(arch, pkgs)
	}
	idx = mutate.Annotations(idx, labels(o, spec)).(v1.ImageIndex)
	dir := filepath.Join(o.Out, "image", spec.name)
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": o.Stamp.Version})); err != nil {
		return err
	}
	if err := sbom.addGo(filepath.Join(tmp, "bin", "amd64", toolgate)); err != nil {
		return err
	}
	return sbom.write(filepath.Join(o.Out, "image", spec.name+".spdx.json"))
}

// baseTree assembles an image's base: the packages' files, the links
// their scripts would make, the CA bundle, the user, its home and /tmp.
func baseTree(pkgs []debPackage, spec imageSpec) (*tree, error) {
	t := newTree()
	for _, p := range pkgs {
		if err := unpack(t, p, spec.keep); err != nil {
			return nil, err
		}
	}
	if spec.keep == nil {
		if err := linkMerged(t); err != nil {
			return nil, err
		}
	}
	ca, err := caBundle(t)
	if err != nil {
		return nil, err
	}
	if spec.keep != nil {
		for n := range t.files { // the lean image keeps the bundle, not its parts
			if strings.HasPrefix(n, "usr/share/ca-certificates") {
				delete(t.files, n)
			}
		}
	}
	for _, l := range spec.links {
		if err := t.symlink(l[0], l[1]); err != nil {
			return nil, err
		}
	}
	u := fmt.Sprintf("%d", userID)
	files := []struct {
		name string
		data string
	}{
		{"etc/passwd", "root:x:0:0:root:/root:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\ntoolgate:x:" + u + ":" + u + ":toolgate:/" + home + ":/usr/sbin/nologin\n"},
		{"etc/group", "root:x:0:\nnogroup:x:65534:\ntoolgate:x:" + u + ":\n"},
		{"etc/nsswitch.conf", "passwd: files\ngroup: files\nhosts: files dns\n"},
		{"etc/ssl/certs/ca-certificates.crt", string(ca)},
	}
	for _, f := range files {
		if _, ok := t.files[f.name]; ok && f.name != "etc/ssl/certs/ca-certificates.crt" {
			return nil, fmt.Errorf("/%s is shipped by %s; the image writes its own", f.name, t.files[f.name].from)
		}
		delete(t.files, f.name)
		if err := t.file(f.name, 0o644, []byte(f.data)); err != nil {
			return nil, err
		}
	}
	for _, d := range []struct {
		name     string
		mode     int64
		uid, gid int
	}{{"tmp", 0o1777, 0, 0}, {"root", 0o700, 0, 0}, {home, 0o755, userID, userID}} {
		if err := t.dir(d.name, d.mode, d.uid, d.gid); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func variant(arch string) string {
	if arch == "arm64" {
		return "v8"
	}
	return ""
}

func labels(o options, spec imageSpec) map[string]string {
	return map[string]string{
		"org.opencontainers.image.source":      source,
		"org.opencontainers.image.version":     o.Stamp.Version,
		"org.opencontainers.image.revision":    o.Stamp.Commit,
		"org.opencontainers.image.created":     o.Stamp.Time.Format(time.RFC3339),
		"org.opencontainers.image.title":       spec.name,
		"org.opencontainers.image.description": spec.description,
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"io.modelcontextprotocol.server.name":  serverName,
	}
}

func describe(pkgs []debPackage) string {
	names := make([]string, len(pkgs))
	for i, p := range pkgs {
		names[i] = p.Name
	}
	if len(names) > 8 {
		return fmt.Sprintf("%d Debian packages (the SBOM lists them)", len(names))
	}
	return "Debian's " + strings.Join(names, ", ")
}

// readPackageList reads the runner's package list: a package name a line,
// or "LINK -> TARGET", a symbolic link; # starts a comment.
func readPackageList(file string) (names []string, links [][2]string, err error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0:
		case len(fields) == 1:
			names = append(names, fields[0])
		case len(fields) == 3 && fields[1] == "->" && strings.HasPrefix(fields[0], "/"):
			links = append(links, [2]string{strings.TrimPrefix(fields[0], "/"), fields[2]})
		default:
			return nil, nil, fmt.Errorf("%s:%d: want a package name or \"/LINK -> TARGET\", not %q", file, n, sc.Text())
		}
	}
	if len(names) == 0 {
		return nil, nil, fmt.Errorf("%s names no package", file)
	}
	return names, links, sc.Err()
}
