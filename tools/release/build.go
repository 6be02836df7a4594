package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// cliPackage holds the variables -ldflags stamps (internal/cli/version.go).
const cliPackage = "github.com/toolgate/toolgate/internal/cli"

// Program names, by their package under cmd/.
const (
	toolgate = "toolgate"
	helper   = "toolgate-sandbox" // the command sandbox's helper, beside toolgate on Linux
)

// programs says which programs ship for goos: toolgate, and the sandbox's
// helper where the sandbox is (Linux). toolgate-agent (toolgate with the
// model vendors' SDKs, 2.6 times its size) does not ship: toolgate's `run
// --provider openai|anthropic` says to go install it.
func programs(goos string) []string {
	if goos == "linux" {
		return []string{toolgate, helper}
	}
	return []string{toolgate}
}

// goBuild builds the programs for goos/goarch into dir, statically, with
// the stamp in -ldflags and no path of this machine in them (-trimpath).
// Go's VCS stamp is off: the stamp is the one record of the source, so a
// build without .git gives the same bytes.
func goBuild(o options, goos, goarch, dir string, progs ...string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ldflags := fmt.Sprintf("-s -w -X %s.version=%s -X %s.commit=%s", cliPackage, o.Stamp.Version, cliPackage, o.Stamp.Commit)
	args := []string{"build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", dir + string(filepath.Separator)}
	for _, p := range progs {
		args = append(args, "./cmd/"+p)
	}
	_, err := command(o.Repo, []string{"CGO_ENABLED=0", "GOOS=" + goos, "GOARCH=" + goarch}, goCommand(), args...)
	return err
}

// goCommand is the go command make passes ($GO), else go.
func goCommand() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}
