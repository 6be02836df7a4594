package cli

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
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
	// to run args and the folder that holds it (nil: nothing yet); nil
	// when the launcher cannot say.
	resolved func(cache string, args []string) (string, *trust.Resolved)
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

// npmResolved reads what npx installed in cache to run args: the folder
// npx itself installs them in (_npx/HASH, HASH its own: the first 16 hex
// digits of the SHA-512 of the package specs, one a line, in order; see
// npxDir), the version of each package named (from its installed
// package.json) and a SHA-256 over every file of the installed tree
// (node_modules: path and content, a link as its target, never followed).
// It returns that tree's folder too, which the box then shows read-only.
// nil when npx has installed nothing for args yet, or when args name a
// local folder (npx's folder for it depends on npx's own resolution).
func npmResolved(cache string, args []string) (string, *trust.Resolved) {
	specs := npxSpecs(args)
	if len(specs) == 0 {
		return "", nil
	}
	dir := npxDir(cache, specs)
	tree := filepath.Join(dir, "node_modules")
	if fi, err := os.Lstat(tree); err != nil || !fi.IsDir() {
		return "", nil
	}
	sum, err := hashTree(tree)
	if err != nil {
		return "", nil
	}
	r := &trust.Resolved{Packages: map[string]string{}, Tree: sum}
	for _, s := range specs {
		name := npmName(s)
		var manifest struct {
			Version string `json:"version"`
		}
		b, err := os.ReadFile(filepath.Join(tree, filepath.FromSlash(name), "package.json"))
		if err != nil || json.Unmarshal(b, &manifest) != nil {
			return "", nil
		}
		r.Packages[name] = manifest.Version
	}
	return tree, r
}

// npxSpecs returns the package specs npx installs to run args (npx's or
// npm exec's): each --package (-p) value, or else the first argument that
// is not an option. nil when there is none, or when one names a local
// folder or file.
func npxSpecs(args []string) []string {
	if len(args) > 0 && (args[0] == "exec" || args[0] == "x") { // npm exec
		args = args[1:]
	}
	var specs []string
	first := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			if i+1 < len(args) && first == "" {
				first = args[i+1]
			}
			break
		}
		if v, ok := strings.CutPrefix(a, "--package="); ok {
			specs = append(specs, v)
			continue
		}
		switch a {
		case "-p", "--package":
			if i+1 < len(args) {
				specs = append(specs, args[i+1])
			}
			i++
			continue
		case "-c", "--call", "-w", "--workspace", "--registry", "--cache", "--userconfig":
			i++ // an option with a value
			continue
		}
		if strings.HasPrefix(a, "-") {
			continue
		}
		first = a
		break
	}
	if len(specs) == 0 && first != "" {
		specs = []string{first}
	}
	for _, s := range specs {
		if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "/") || strings.HasPrefix(s, "~") || strings.HasPrefix(s, "file:") {
			return nil
		}
	}
	return specs
}

// npxDir is the folder npx installs specs in under cache: npm's libnpmexec
// names it by the first 16 hex digits of the SHA-512 of the specs, sorted
// and joined by newlines. npx sorts by locale (localeCompare "en"); here
// they are sorted bytewise, which is the same for one package and for
// specs in lower case; where the two orders differ the folder is not
// found and nothing is pinned (the registry then stays granted).
func npxDir(cache string, specs []string) string {
	s := slices.Sorted(slices.Values(specs))
	sum := sha512.Sum512([]byte(strings.Join(s, "\n")))
	return filepath.Join(cache, "_npx", hex.EncodeToString(sum[:])[:16])
}

// npmName is the package name of an npm spec: @scope/name@1.2 →
// @scope/name, name@^1 → name.
func npmName(spec string) string {
	if i := strings.LastIndex(spec, "@"); i > 0 {
		return spec[:i]
	}
	return spec
}

// hashTree returns a SHA-256 over everything under dir, in path order:
// each entry's path and kind, a regular file's content, a link's target
// (not followed).
func hashTree(dir string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(h, "%s\x00%s\x00", filepath.ToSlash(rel), d.Type())
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			io.WriteString(h, target)
		case d.Type().IsRegular():
			fi, err := d.Info()
			if err != nil {
				return err
			}
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			if at, err := f.Stat(); err != nil || !os.SameFile(fi, at) {
				f.Close()
				return fmt.Errorf("%s changed while it was read", p) // a link swapped in
			}
			fh := sha256.New()
			_, err = io.Copy(fh, f)
			f.Close()
			if err != nil {
				return err
			}
			h.Write(fh.Sum(nil))
		}
		io.WriteString(h, "\n")
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
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
