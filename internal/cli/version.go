package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version and commit are stamped at build time from git (make image,
// make package): -ldflags "-X github.com/toolgate/toolgate/internal/cli.version=1.2.3
// -X github.com/toolgate/toolgate/internal/cli.commit=abc123…". Without
// them the commit is Go's VCS stamp, when the build recorded one.
var (
	version = "dev"
	commit  = ""
)

// commitFlag is how -ldflags names commit.
const commitFlag = "-X github.com/toolgate/toolgate/internal/cli.commit="

func newVersionCmd(s *streams) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "version",
		Short:   "Print toolgate's version, commit and Go version",
		Example: "  toolgate version --json",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			v := map[string]string{"version": version, "commit": commit, "go": runtime.Version(), "platform": runtime.GOOS + "/" + runtime.GOARCH}
			if bi, ok := debug.ReadBuildInfo(); ok && commit == "" {
				for _, kv := range bi.Settings {
					switch kv.Key {
					case "vcs.revision":
						v["commit"] = kv.Value
					case "vcs.modified":
						if kv.Value == "true" {
							v["commit"] += "+dirty"
						}
					}
				}
			}
			if asJSON {
				return printJSON(s, v)
			}
			_, err := fmt.Fprintf(s.out, "toolgate %s (%s, %s %s)\n", v["version"], v["commit"], v["go"], v["platform"])
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
