package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"debug/macho"
	"debug/pe"
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
)

// TestPackage builds the archives, packages and server.json, and checks
// that the checksums verify (sha256sum -c), what each archive holds and
// for which platform its programs are, that dpkg-deb reads each .deb, that
// the linux/amd64 toolgate prints this build's version and commit, and
// that a second build gives the same checksums (from the same programs:
// TestImage builds the programs twice; Go's builds are reproducible).
func TestPackage(t *testing.T) {
	o := testOptions(t)
	o.Bin = t.TempDir()
	o.Image = "registry.example/toolgate/toolgate"
	if err := buildPackages(o); err != nil {
		t.Fatal(err)
	}
	sums := fmt.Sprintf("toolgate_%s_checksums.txt", o.Stamp.Version)
	cmd := exec.Command("sha256sum", "--strict", "-c", sums)
	cmd.Dir = o.Out
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sha256sum -c %s: %v\n%s", sums, err, out)
	}
	listed, err := os.ReadFile(filepath.Join(o.Out, sums))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(o.Out)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != sums && !strings.Contains(string(listed), "  "+e.Name()+"\n") {
			t.Errorf("%s is not in %s", e.Name(), sums)
		}
	}
	for _, p := range archivePlatforms {
		name := fmt.Sprintf("toolgate_%s_%s_%s", o.Stamp.Version, p.os, p.arch)
		files := archiveFiles(t, filepath.Join(o.Out, name), p.os == "windows")
		var want []string
		for _, prog := range programs(p.os) {
			if p.os == "windows" {
				prog += ".exe"
			}
			want = append(want, prog)
			checkProgram(t, name+"/"+prog, files[prog], p.os, p.arch)
		}
		want = append(want, docs...)
		var got []string
		for f := range files {
			got = append(got, f)
		}
		sort.Strings(got)
		sort.Strings(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s holds %v, want %v", name, got, want)
		}
		if p.os == "linux" && p.arch == "amd64" {
			bin := filepath.Join(t.TempDir(), "toolgate")
			if err := os.WriteFile(bin, files["toolgate"], 0o755); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(bin, "version").CombinedOutput()
			if want := fmt.Sprintf("toolgate %s (%s, ", o.Stamp.Version, o.Stamp.Commit); err != nil || !strings.HasPrefix(string(out), want) {
				t.Errorf("toolgate version from %s = %q, %v; want it to start with %q", name, out, err, want)
			}
		}
		if p.os == "linux" {
			deb := filepath.Join(o.Out, name+".deb")
			out, err := exec.Command("dpkg-deb", "--contents", deb).CombinedOutput()
			if err != nil {
				t.Fatalf("dpkg-deb --contents %s: %v\n%s", deb, err, out)
			}
			for _, f := range []string{"./usr/bin/toolgate", "./usr/bin/toolgate-sandbox", "./usr/lib/systemd/system/toolgate.service", "./etc/toolgate/toolgate.yaml"} {
				if !strings.Contains(string(out), " "+f+"\n") {
					t.Errorf("%s does not install %s:\n%s", filepath.Base(deb), f, out)
				}
			}
			out, err = exec.Command("dpkg-deb", "--field", deb, "Package", "Version", "Architecture", "Recommends").CombinedOutput()
			// nfpm writes a pre-release as Debian sorts it: 0.0.0~2026…
			debVersion := strings.Replace(o.Stamp.Version, "-", "~", 1)
			if want := fmt.Sprintf("Package: toolgate\nVersion: %s\nArchitecture: %s\nRecommends: bubblewrap\n", debVersion, p.arch); err != nil || string(out) != want {
				t.Errorf("dpkg-deb --field %s = %q, %v; want %q", filepath.Base(deb), out, err, want)
			}
			rpm := filepath.Join(o.Out, name+".rpm")
			out, err = exec.Command("rpm", "--query", "--package", "--list", rpm).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "/usr/bin/toolgate\n") || !strings.Contains(string(out), "/usr/bin/toolgate-sandbox\n") {
				t.Errorf("rpm --query --list %s: %v\n%s", filepath.Base(rpm), err, out)
			}
			out, err = exec.Command("rpm", "--query", "--package", "--queryformat", "%{ARCH} %{RECOMMENDNAME}", rpm).CombinedOutput()
			if want := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[p.arch] + " bubblewrap"; err != nil || string(out) != want {
				t.Errorf("rpm --query %s = %q, %v; want %q", filepath.Base(rpm), out, err, want)
			}
		}
	}
	var server struct {
		Name, Version string
		Packages      []struct{ RegistryType, Identifier string }
	}
	data, err := os.ReadFile(filepath.Join(o.Out, "server.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &server); err != nil || server.Name != "io.github.toolgate/toolgate" || server.Version != o.Stamp.Version ||
		len(server.Packages) != 2 || server.Packages[0].Identifier != "registry.example/toolgate/toolgate:"+o.Stamp.Version {
		t.Errorf("server.json: %v\n%s", err, data)
	}
	again := o
	again.Out = t.TempDir()
	if err := buildPackages(again); err != nil {
		t.Fatal(err)
	}
	if second, err := os.ReadFile(filepath.Join(again.Out, sums)); err != nil || !bytes.Equal(second, listed) {
		t.Errorf("two builds of one commit differ: %v\n%s\n%s", err, listed, second)
	}
}

// archiveFiles reads a .tar.gz or .zip (name without the extension) into
// a map of its files.
func archiveFiles(t *testing.T, name string, isZip bool) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	if isZip {
		zr, err := zip.OpenReader(name + ".zip")
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		for _, f := range zr.File {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			files[f.Name], err = io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
		}
		return files
	}
	f, err := os.Open(name + ".tar.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if files[h.Name], err = io.ReadAll(tr); err != nil {
			t.Fatal(err)
		}
	}
}

// checkProgram checks that data is a program for goos/goarch.
func checkProgram(t *testing.T, name string, data []byte, goos, goarch string) {
	t.Helper()
	r := bytes.NewReader(data)
	var machine string
	switch goos {
	case "linux":
		if f, err := elf.NewFile(r); err == nil {
			machine = map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64"}[f.Machine]
		}
	case "darwin":
		if f, err := macho.NewFile(r); err == nil {
			machine = map[macho.Cpu]string{macho.CpuAmd64: "amd64", macho.CpuArm64: "arm64"}[f.Cpu]
		}
	case "windows":
		if f, err := pe.NewFile(r); err == nil {
			machine = map[uint16]string{pe.IMAGE_FILE_MACHINE_AMD64: "amd64", pe.IMAGE_FILE_MACHINE_ARM64: "arm64"}[f.Machine]
		}
	}
	if machine != goarch {
		t.Errorf("%s is not a %s/%s program (%d bytes)", name, goos, goarch, len(data))
	}
}
