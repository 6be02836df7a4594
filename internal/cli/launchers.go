package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/toolgate/toolgate/trust"
)

// A launcher is a program that fetches a package and runs it (npx -y
// pkg): in the box it gets a cache folder of its own under toolgate's
// state folder, kept from one start to the next, and, until the package
// is in that cache, its registry, taken from its own configuration on this
// machine, as an exact private: host:port (the egress proxy then allows
// it, even on a private address, and nothing else of that network). Once
// the package is cached, the launcher runs offline with no network, and
// what it resolved is pinned with the upstream's identity.
type launcher struct {
	name     string   // npm
	commands []string // the programs that are this launcher
	// registry asks the launcher's own configuration for its registry URL.
	registry func(ctx context.Context) (string, error)
	// env are the variables that point the launcher at the registry and
	// the cache folder.
	env func(registry, cache string) map[string]string
	// resolved reads, from the cache folder, what the launcher installed
	// to run args (nil: nothing yet); nil when the launcher cannot say.
	resolved func(cache string, args []string) *trust.Resolved
	// offline are the variables that keep the launcher off the network.
	offline map[string]string
}

// launchers are the launchers the box knows.
var launchers = []launcher{{
	name:     "npm",
	commands: []string{"npx", "npm"},
	registry: npmRegistry,
	env:      npmEnv,
	resolved: npmResolved,
	offline:  map[string]string{"npm_config_offline": "true", "npm_config_prefer_offline": "true"},
}, {
	// pnpm dlx and yarn dlx read npm's registry setting; what they
	// resolved is not read yet (their caches differ).
	name:     "npm",
	commands: []string{"pnpm", "yarn"},
	registry: npmRegistry,
	env:      npmEnv,
}}

func npmRegistry(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "npm", "config", "get", "registry").Output()
	return strings.TrimSpace(string(out)), err
}

func npmEnv(registry, cache string) map[string]string {
	return map[string]string{"npm_config_registry": registry, "npm_config_cache": cache,
		"npm_config_update_notifier": "false", "npm_config_fund": "false", "npm_config_audit": "false",
		"npm_config_prefer_offline": "true"} // a cached package starts without asking the registry
}

// npmResolved reads what npx installed in cache to run args: the install
// folder (_npx/HASH) whose package list (its package.json's
// _npx.packages) is named by args, the version of each package it lists
// and a SHA-256 over its lock file's packages (path, version, integrity).
// nil when npx has installed nothing for args yet.
func npmResolved(cache string, args []string) *trust.Resolved {
	named := map[string]bool{}
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--package="); ok {
			a = v
		} else if (a == "-p" || a == "--package") && i+1 < len(args) {
			a = args[i+1]
		}
		named[a] = true
	}
	dirs, _ := filepath.Glob(filepath.Join(cache, "_npx", "*", "package.json"))
	for _, pj := range dirs {
		var manifest struct {
			Dependencies map[string]string `json:"dependencies"`
			Npx          struct {
				Packages []string `json:"packages"`
			} `json:"_npx"`
		}
		b, err := os.ReadFile(pj)
		if err != nil || json.Unmarshal(b, &manifest) != nil || len(manifest.Npx.Packages) == 0 {
			continue
		}
		if slices.ContainsFunc(manifest.Npx.Packages, func(p string) bool { return !named[p] }) {
			continue
		}
		var lock struct {
			Packages map[string]struct {
				Version   string `json:"version"`
				Integrity string `json:"integrity"`
			} `json:"packages"`
		}
		b, err = os.ReadFile(filepath.Join(filepath.Dir(pj), "package-lock.json"))
		if err != nil || json.Unmarshal(b, &lock) != nil {
			continue
		}
		r := &trust.Resolved{Packages: map[string]string{}}
		for name := range manifest.Dependencies {
			r.Packages[name] = lock.Packages["node_modules/"+name].Version
		}
		h := sha256.New()
		for _, k := range slices.Sorted(maps.Keys(lock.Packages)) {
			fmt.Fprintf(h, "%s\x00%s\x00%s\n", k, lock.Packages[k].Version, lock.Packages[k].Integrity)
		}
		r.Tree = hex.EncodeToString(h.Sum(nil))
		return r
	}
	return nil
}

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
