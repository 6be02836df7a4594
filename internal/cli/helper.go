package cli

import (
	"debug/buildinfo"
	"os"
	"path/filepath"
	"runtime/debug"
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
	self, err := os.Executable()
	if err != nil {
		return ""
	}
	path := filepath.Join(filepath.Dir(self), sandboxProgram)
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
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

// sameBuild reports whether two programs were built from the same source
// with the same Go and tags: the same release (or pseudo-)version of the
// module, or the same commit of an unmodified checkout. A build that
// records neither (go build with -buildvcs=false, a changed tree) is the
// same as nothing.
func sameBuild(a, b *debug.BuildInfo) bool {
	id := func(bi *debug.BuildInfo) string {
		set := map[string]string{}
		for _, s := range bi.Settings {
			set[s.Key] = s.Value
		}
		build := bi.GoVersion + " " + bi.Main.Path + " tags=" + set["-tags"] + " " + set["GOOS"] + "/" + set["GOARCH"]
		switch {
		case bi.Main.Path == "":
			return ""
		case bi.Main.Version != "" && bi.Main.Version != "(devel)":
			return build + " " + bi.Main.Version + " " + bi.Main.Sum
		case set["vcs.revision"] != "" && set["vcs.modified"] == "false":
			return build + " " + set["vcs"] + ":" + set["vcs.revision"]
		}
		return ""
	}
	x := id(a)
	return x != "" && x == id(b)
}
