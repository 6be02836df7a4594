package cli

import (
	"runtime/debug"
	"testing"
)

func TestSameBuild(t *testing.T) {
	info := func(version string, settings ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/toolgate/toolgate", Version: version}}
		bi.Settings = append(bi.Settings, debug.BuildSetting{Key: "GOOS", Value: "linux"}, debug.BuildSetting{Key: "GOARCH", Value: "amd64"})
		for i := 0; i+1 < len(settings); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return bi
	}
	clean := []string{"vcs", "git", "vcs.revision", "abc123", "vcs.modified", "false"}
	goOther := info("(devel)", clean...)
	goOther.GoVersion = "go1.26.5"
	for _, c := range []struct {
		name string
		a, b *debug.BuildInfo
		want bool
	}{
		{"same release", info("v1.2.0"), info("v1.2.0"), true},
		{"same clean commit", info("(devel)", clean...), info("(devel)", clean...), true},
		{"another release", info("v1.2.0"), info("v1.3.0"), false},
		{"another commit", info("(devel)", clean...), info("(devel)", "vcs", "git", "vcs.revision", "def456", "vcs.modified", "false"), false},
		{"a changed tree", info("(devel)", "vcs", "git", "vcs.revision", "abc123", "vcs.modified", "true"), info("(devel)", "vcs", "git", "vcs.revision", "abc123", "vcs.modified", "true"), false},
		{"no record of the source", info("(devel)"), info("(devel)"), false},
		{"a dirty pseudo-version", info("v0.0.0-20261202183416-3fdeebfc4d33+dirty", "vcs.modified", "true"), info("v0.0.0-20261202183416-3fdeebfc4d33+dirty", "vcs.modified", "true"), false},
		{"a clean pseudo-version", info("v0.0.0-20261202183416-3fdeebfc4d33"), info("v0.0.0-20261202183416-3fdeebfc4d33"), true},
		{"other build tags", info("v1.2.0", "-tags", "x"), info("v1.2.0"), false},
		{"another Go", info("(devel)", clean...), goOther, false},
		{"the same commit stamped by -ldflags", info("(devel)", "-ldflags", "-s -w -X github.com/toolgate/toolgate/internal/cli.version=1.2.0 -X github.com/toolgate/toolgate/internal/cli.commit=abc123"), info("(devel)", "-ldflags", "-s -w -X github.com/toolgate/toolgate/internal/cli.version=1.2.0 -X github.com/toolgate/toolgate/internal/cli.commit=abc123"), true},
		{"another commit stamped by -ldflags", info("(devel)", "-ldflags", "-s -w -X github.com/toolgate/toolgate/internal/cli.version=1.2.0 -X github.com/toolgate/toolgate/internal/cli.commit=abc123"), info("(devel)", "-ldflags", "-s -w -X github.com/toolgate/toolgate/internal/cli.version=1.2.0 -X github.com/toolgate/toolgate/internal/cli.commit=def456"), false},
		{"a changed tree stamped by -ldflags", info("(devel)", "-ldflags", "-s -w -X github.com/toolgate/toolgate/internal/cli.version=1.2.0 -X github.com/toolgate/toolgate/internal/cli.commit=abc123+dirty"), info("(devel)", "-ldflags", "-s -w -X github.com/toolgate/toolgate/internal/cli.version=1.2.0 -X github.com/toolgate/toolgate/internal/cli.commit=abc123+dirty"), false},
		{"other -ldflags", info("(devel)", "-ldflags", "-s"), info("(devel)", "-ldflags", "-s"), false},
	} {
		if got := sameBuild(c.a, c.b); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
