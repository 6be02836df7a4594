package cli

import (
	"debug/buildinfo"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
)

// sandboxProgram is the small helper program of the command sandbox
// (cmd/toolgate-sandbox).
const sandboxProgram = "toolgate-sandbox"

// sandboxHelper returns toolgate-sandbox beside this program when it is the
// same build, else "" (the sandbox then starts this program as its helper,
// which takes tens of milliseconds longer: it initialises every package
// toolgate links). A helper of another build could set up other
// protections than this program expects, so "same" is strict (sameBuild).
func sandboxHelper() string {
	path, fi := beside(sandboxProgram)
	if path == "" || !trusted(fi) {
		return ""
	}
	if dir, err := os.Stat(filepath.Dir(path)); err != nil || !trusted(dir) {
		return ""
	}
	mine, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	theirs, err := buildinfo.ReadFile(path)
	if err != nil || !sameBuild(mine, theirs) {
		return ""
	}
	return path
}

// beside returns the executable file named name in this program's folder,
// or "".
func beside(name string) (string, os.FileInfo) {
	self, err := os.Executable()
	if err != nil {
		return "", nil
	}
	path := filepath.Join(filepath.Dir(self), name)
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return "", nil
	}
	return path, fi
}

// sameBuild reports whether two programs were built from the same source
// with the same Go and tags: the same release (or pseudo-)version of the
// module, or the same commit of an unmodified checkout (Go's VCS stamp, or
// the -ldflags stamp of commit, which names "+dirty" for a changed tree). A build that
// records neither (go build with -buildvcs=false), or a changed tree (Go
// stamps it "+dirty", vcs.modified=true), is the same as nothing.
func sameBuild(a, b *debug.BuildInfo) bool {
	id := func(bi *debug.BuildInfo) string {
		set := map[string]string{}
		for _, s := range bi.Settings {
			set[s.Key] = s.Value
		}
		build := bi.GoVersion + " " + bi.Main.Path + " tags=" + set["-tags"] + " " + set["GOOS"] + "/" + set["GOARCH"]
		switch {
		case bi.Main.Path == "", set["vcs.modified"] == "true", strings.HasSuffix(bi.Main.Version, "+dirty"):
			return "" // a changed tree: two builds of it need not be the same
		case bi.Main.Version != "" && bi.Main.Version != "(devel)":
			return build + " " + bi.Main.Version + " " + bi.Main.Sum
		case set["vcs.revision"] != "" && set["vcs.modified"] == "false":
			return build + " " + set["vcs"] + ":" + set["vcs.revision"]
		case strings.Contains(set["-ldflags"], commitFlag) && !strings.Contains(set["-ldflags"], "+dirty"):
			return build + " ldflags:" + set["-ldflags"] // make image and make package stamp the commit
		}
		return ""
	}
	x := id(a)
	return x != "" && x == id(b)
}
