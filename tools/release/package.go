package main

import (
	"archive/zip"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the deb packager
	_ "github.com/goreleaser/nfpm/v2/rpm" // registers the rpm packager
)

// The platforms archives are built for.
var archivePlatforms = []struct{ os, arch string }{
	{"linux", "amd64"}, {"linux", "arm64"},
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"},
}

// docs go into every archive beside the programs.
var docs = []string{"LICENSE", "NOTICE", "README.md"}

// nfpmConfig describes the .deb and .rpm.
const nfpmConfig = "packaging/nfpm.yaml"

// buildPackages writes under o.Out the archives, the .deb and .rpm for
// linux/amd64 and linux/arm64, server.json and
// toolgate_VERSION_checksums.txt (sha256sum's format) of them all.
func buildPackages(o options) error {
	tmp, err := os.MkdirTemp("", "toolgate-package-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return err
	}
	var made []string
	for _, p := range archivePlatforms {
		bin := filepath.Join(tmp, p.os+"-"+p.arch)
		if o.Bin != "" {
			bin = filepath.Join(o.Bin, p.os+"-"+p.arch)
		}
		progs := programs(p.os)
		if _, err := os.Stat(bin); o.Bin == "" || err != nil {
			if err := goBuild(o, p.os, p.arch, bin, progs...); err != nil {
				return err
			}
		}
		t := newTree()
		for _, prog := range progs {
			if p.os == "windows" {
				prog += ".exe"
			}
			if err := addFile(t, prog, filepath.Join(bin, prog), 0o755); err != nil {
				return err
			}
		}
		for _, d := range docs {
			if err := addFile(t, d, filepath.Join(o.Repo, d), 0o644); err != nil {
				return err
			}
		}
		name := fmt.Sprintf("toolgate_%s_%s_%s", o.Stamp.Version, p.os, p.arch)
		if p.os == "windows" {
			name += ".zip"
			err = writeFile(filepath.Join(o.Out, name), func(w io.Writer) error { return writeZip(t, w, o) })
		} else {
			name += ".tar.gz"
			err = writeFile(filepath.Join(o.Out, name), func(w io.Writer) error {
				zw := gzip.NewWriter(w)
				if err := t.writeTar(zw, o.Stamp.Time); err != nil {
					return err
				}
				return zw.Close()
			})
		}
		if err != nil {
			return err
		}
		made = append(made, name)
		if p.os == "linux" {
			for _, format := range []string{"deb", "rpm"} {
				file, err := linuxPackage(o, format, p.arch, bin)
				if err != nil {
					return fmt.Errorf("%s for %s: %w", format, p.arch, err)
				}
				made = append(made, file)
			}
		}
	}
	if err := writeFile(filepath.Join(o.Out, "server.json"), func(w io.Writer) error { return writeServerJSON(o, w) }); err != nil {
		return err
	}
	made = append(made, "server.json")
	return writeChecksums(o, made)
}

func addFile(t *tree, name, src string, mode int64) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return t.file(name, mode, data)
}

// writeFile writes file through write, atomically.
func writeFile(file string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(file), ".tmp-"+filepath.Base(file))
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), file)
}

// writeZip writes the tree's files (it has no folders) as a zip archive,
// sorted, every time the stamp's.
func writeZip(t *tree, w io.Writer, o options) error {
	names := make([]string, 0, len(t.files))
	for n := range t.files {
		names = append(names, n)
	}
	sort.Strings(names)
	zw := zip.NewWriter(w)
	for _, n := range names {
		e := t.files[n]
		h := &zip.FileHeader{Name: n, Method: zip.Deflate, Modified: o.Stamp.Time}
		h.SetMode(os.FileMode(e.hdr.Mode))
		f, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if _, err := f.Write(e.data); err != nil {
			return err
		}
	}
	return zw.Close()
}

// linuxPackage builds toolgate_VERSION_linux_ARCH.FORMAT with nfpm from
// packaging/nfpm.yaml and the programs in bin, and returns its name.
func linuxPackage(o options, format, arch, bin string) (string, error) {
	vars := map[string]string{"REPO": o.Repo, "BIN": bin, "ARCH": arch, "VERSION": o.Stamp.Version}
	cfg, err := nfpm.ParseFileWithEnvMapping(filepath.Join(o.Repo, nfpmConfig), func(k string) string { return vars[k] })
	if err != nil {
		return "", err
	}
	info, err := cfg.Get(format)
	if err != nil {
		return "", err
	}
	info = nfpm.WithDefaults(info)
	info.MTime = o.Stamp.Time
	if err := nfpm.Validate(info); err != nil {
		return "", err
	}
	pkgr, err := nfpm.Get(format)
	if err != nil {
		return "", err
	}
	name := fmt.Sprintf("toolgate_%s_linux_%s.%s", o.Stamp.Version, arch, format)
	info.Target = filepath.Join(o.Out, name)
	return name, writeFile(info.Target, func(w io.Writer) error { return pkgr.Package(info, w) })
}

// writeServerJSON writes the MCP registry's description of toolgate: its
// image and its Go module, run over stdio (toolgate serve).
func writeServerJSON(o options, w io.Writer) error {
	type transport struct {
		Type string `json:"type"`
	}
	type argument struct {
		Type  string `json:"type"`
		Value string `json:"value"`
	}
	type pkg struct {
		RegistryType     string     `json:"registryType"`
		Identifier       string     `json:"identifier"`
		Version          string     `json:"version,omitempty"`
		Transport        transport  `json:"transport"`
		PackageArguments []argument `json:"packageArguments,omitempty"`
	}
	server := struct {
		Schema      string `json:"$schema"`
		Name        string `json:"name"`
		Title       string `json:"title"`
		Description string `json:"description"`
		Version     string `json:"version"`
		Repository  struct {
			URL    string `json:"url"`
			Source string `json:"source"`
		} `json:"repository"`
		WebsiteURL string `json:"websiteUrl"`
		Packages   []pkg  `json:"packages"`
	}{
		Schema:      "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
		Name:        serverName,
		Title:       "toolgate",
		Description: "The tool layer for LLM agents: files, commands and web behind a policy and an audit log",
		Version:     o.Stamp.Version,
		WebsiteURL:  source,
		Packages: []pkg{
			// The image's entrypoint is toolgate and its command serve: MCP over stdio.
			{RegistryType: "oci", Identifier: o.Image + ":" + o.Stamp.Version, Transport: transport{"stdio"}},
			{RegistryType: "go", Identifier: "github.com/toolgate/toolgate", Version: "v" + o.Stamp.Version, Transport: transport{"stdio"},
				PackageArguments: []argument{{"positional", "serve"}}},
		},
	}
	server.Repository.URL, server.Repository.Source = source, "github"
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(server)
}

// writeChecksums writes toolgate_VERSION_checksums.txt: a sha256 and a
// name a line, as sha256sum -c reads it.
func writeChecksums(o options, names []string) error {
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		f, err := os.Open(filepath.Join(o.Out, n))
		if err != nil {
			return err
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(h.Sum(nil)), n)
	}
	return os.WriteFile(filepath.Join(o.Out, fmt.Sprintf("toolgate_%s_checksums.txt", o.Stamp.Version)), []byte(b.String()), 0o644)
}
