package cli

import (
	"context"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// A launcher is a program that fetches a package and runs it (npx -y
// pkg): in the box it gets its registry, taken from its own configuration
// on this machine, as an exact private: host:port (the egress proxy then
// allows it, even on a private address, and nothing else of that network),
// and a cache folder of its own under toolgate's state folder, kept from
// one start to the next.
type launcher struct {
	name     string   // npm
	commands []string // the programs that are this launcher
	// registry asks the launcher's own configuration for its registry URL.
	registry func(ctx context.Context) (string, error)
	// env are the variables that point the launcher at the registry and
	// the cache folder.
	env func(registry, cache string) map[string]string
}

// launchers are the launchers the box knows.
var launchers = []launcher{{
	name:     "npm",
	commands: []string{"npx", "npm", "pnpm", "yarn"},
	registry: func(ctx context.Context) (string, error) {
		out, err := exec.CommandContext(ctx, "npm", "config", "get", "registry").Output()
		return strings.TrimSpace(string(out)), err
	},
	env: func(registry, cache string) map[string]string {
		return map[string]string{"npm_config_registry": registry, "npm_config_cache": cache,
			"npm_config_update_notifier": "false", "npm_config_fund": "false", "npm_config_audit": "false",
			"npm_config_prefer_offline": "true"} // a cached package starts without asking the registry
	},
}}

// launcherOf returns the launcher command starts, if any.
func launcherOf(command string) *launcher {
	base := filepath.Base(command)
	for i := range launchers {
		for _, c := range launchers[i].commands {
			if base == c {
				return &launchers[i]
			}
		}
	}
	return nil
}

// launcherGrants returns what the box of an upstream started by l adds:
// the registry's exact host:port for private:, the cache folder (made
// under toolgate's state folder) and the variables.
func launcherGrants(l *launcher, upstream string) (hostport, cache string, env map[string]string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reg, err := l.registry(ctx)
	if err != nil || reg == "" {
		return "", "", nil, err
	}
	u, err := url.Parse(reg)
	if err != nil || u.Hostname() == "" {
		return "", "", nil, err
	}
	port := u.Port()
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	}
	cache = filepath.Join(stateDir(), "launchers", l.name, upstream)
	if err := os.MkdirAll(cache, 0o700); err != nil {
		return "", "", nil, err
	}
	if cache, err = filepath.EvalSymlinks(cache); err != nil {
		return "", "", nil, err
	}
	return net.JoinHostPort(u.Hostname(), port), cache, l.env(reg, cache), nil
}
