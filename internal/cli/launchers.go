package cli

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"errors"
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
	"sync"
	"time"

	"github.com/toolgate/toolgate/internal/atomicfile"

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
	// installed reads, from the cache folder, the folder where the
	// launcher (command) installed what it runs for args and the version
	// of each package in it ("": nothing yet), without hashing it
	// (resolution does); nil when the launcher cannot say.
	installed func(cache, command string, args []string) (string, map[string]string)
	// folder names the folder under cache that the launcher (command)
	// installs args in, as it names it ("": it installs nothing of its
	// own, as for npx's local folders); installed reads there.
	folder func(cache, command string, args []string) string
	// check refuses args whose install folder cannot be named when the
	// launcher is command (nil: any).
	check func(command string, args []string) error
	// offline are the variables that keep the launcher off the network.
	offline map[string]string
	// installOnly are the variables of env that only an install needs
	// (an index URL may hold credentials): once installed they are not
	// given, so the server never sees them.
	installOnly []string
	// scratch are the folders under the cache that the launcher still
	// writes once installed is there (the cache is then read-only).
	scratch func(cache, installed string) []string
}

// launchers are the launchers the box knows.
var launchers = []launcher{{
	name:      "npm",
	commands:  []string{"npx", "npm"},
	registry:  npmRegistry,
	env:       npmEnv,
	installed: npmInstalled,
	folder:    npxFolder,
	check:     func(_ string, args []string) error { _, err := npxSpecs(args); return err },
	offline: map[string]string{"npm_config_offline": "true", "npm_config_prefer_offline": "true",
		"npm_config_logs_dir": "/tmp"}, // the box's own
	// npx takes its lock (a folder, concurrency.lock) in _npx/HASH, and
	// npm's HTTP cache (_cacache) is written to even offline; neither is
	// run (the install is read-only beneath _npx/HASH, and the cache's
	// root, a read-only mount, cannot lose it).
	scratch: func(cache, installed string) []string {
		return []string{filepath.Dir(installed), filepath.Join(cache, "_cacache")}
	},
}, {
	// pnpm dlx and yarn dlx read npm's registry setting; what they
	// installed is not read yet (their caches differ).
	name:     "npm",
	commands: []string{"pnpm", "yarn"},
	registry: npmRegistry,
	env:      npmEnv,
}, {
	// pipx run: its index is pip's (PIP_INDEX_URL, or pip's
	// configuration); its cached virtual environments live under PIPX_HOME.
	name:      "pipx",
	commands:  []string{"pipx"},
	registry:  pipIndex,
	env:       pipxEnv,
	installed: pipxInstalled,
	folder:    pipxVenv,
	check:     pipxCheck,
	offline:   map[string]string{"PIP_NO_INDEX": "1"},
	// PIP_INDEX_URL is often https://user:token@host/simple.
	installOnly: []string{"PIP_INDEX_URL"},
	// pipx writes its log of each command in PIPX_HOME/logs.
	scratch: func(cache, _ string) []string { return []string{filepath.Join(cache, "logs")} },
}}

// pinned is what the pin holds of the install of an upstream l started
// with args, read once it has listed its tools (the launcher has then
// installed what runs): what l resolved, or, where nothing is installed
// in the folder l names for args, a resolution that cannot be pinned, so
// that the upstream is quarantined: an install toolgate did not find
// (npx or pipx named it otherwise) is never left running unpinned with
// its registry granted.
func (l *launcher) pinned(cache, command string, args []string) *trust.Resolved {
	installed, packages := l.installed(cache, command, args)
	if installed != "" {
		return resolution(installed, packages)
	}
	if dir := l.folder(cache, command, args); dir != "" {
		return unpinnable(nil, fmt.Errorf("%s ran, but nothing it installed is in %s, the folder it names for %q: it installed elsewhere and what runs cannot be pinned", filepath.Base(command), dir, args))
	}
	if l.check != nil {
		if err := l.check(command, args); err != nil { // the folder cannot be named (any more)
			return unpinnable(nil, err)
		}
	}
	return nil
}

// resolution is what the pin records of the install in dir holding
// packages: their versions and a SHA-256 over the whole tree (hashTree:
// every file's content, every link's target, never followed), or, for a
// tree that cannot be hashed, a resolution that differs at each look
// (unpinnable).
func resolution(dir string, packages map[string]string) *trust.Resolved {
	sum, err := hashTree(dir)
	if err != nil {
		return unpinnable(packages, err)
	}
	return &trust.Resolved{Packages: packages, Tree: sum}
}

// launcherResolution returns what the pin holds of the install of an
// upstream l starts with args, at each listing. installed and packages
// are what l.installed found as the gateway started: that install is
// hashed now, in the background (the hash reads every file: for a large
// npm tree most of a second of CPU), while the gateway and the upstream
// start, and the first listing takes that hash; each later listing looks
// and hashes again (pinned). The box shows an install found at the start
// read-only, so the first listing's upstream ran what was hashed.
func launcherResolution(l *launcher, cache, command string, args []string, installed string, packages map[string]string) func() *trust.Resolved {
	var mu sync.Mutex
	var first chan *trust.Resolved
	if installed != "" {
		c := make(chan *trust.Resolved, 1)
		go func() { c <- resolution(installed, packages) }()
		first = c
	}
	return func() *trust.Resolved {
		mu.Lock()
		c := first
		first = nil
		mu.Unlock()
		if c != nil {
			return <-c
		}
		return l.pinned(cache, command, args)
	}
}

// npmRegistry is the registry npm uses here: what `npm config get
// registry` says. That runs npm (a Node start: 0.1 to 0.3 s) before every
// start of a boxed npx upstream, so its answer is kept in the state folder
// (npmSeen) with a hash of everything npm reads to give it, and given
// again while that hash is the same.
func npmRegistry(ctx context.Context) (string, error) {
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", err
	}
	// Beside, not in, the launchers' caches: those are granted to boxes.
	store := filepath.Join(stateDir(), "npm-registry.json")
	var kept npmSeen
	if b, err := readOwn(store); err == nil {
		json.Unmarshal(b, &kept)
	}
	before := npmInputs(npm, kept.Files)
	if kept.Inputs != "" && kept.Inputs == before {
		return kept.Registry, nil
	}
	out, err := exec.CommandContext(ctx, npm, "config", "get", "registry", "userconfig", "globalconfig").Output()
	if err != nil {
		return "", err
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			got[k] = strings.TrimSpace(v)
		}
	}
	seen := npmSeen{Registry: got["registry"], Files: []string{got["userconfig"], got["globalconfig"]}}
	if seen.Registry == "" {
		return "", fmt.Errorf("npm config get registry answered %q", out)
	}
	// Given again only if what npm read was the same before it ran as
	// after (a file changed meanwhile is read again next time); the
	// files it names are known once it has run, so an answer is first
	// kept at the second run that names the same.
	if slices.Equal(seen.Files, kept.Files) && before != "" && before == npmInputs(npm, seen.Files) {
		seen.Inputs = before
	}
	if b, err := json.Marshal(seen); err == nil && os.MkdirAll(stateDir(), 0o700) == nil {
		atomicfile.Write(store, b, 0o600)
	}
	return seen.Registry, nil
}

// npmSeen is npm's registry as npm said it, with what it read (npmInputs).
type npmSeen struct {
	Registry string   `json:"registry"`
	Files    []string `json:"files"` // the user and global npmrc npm named
	Inputs   string   `json:"inputs"`
}

// readOwn reads the file path if it is a regular file of this user that
// no one else may write or read (mode 0600 or less), as atomicfile.Write
// writes them: another's file is not taken for toolgate's own.
func readOwn(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || !ownedAlone(fi) {
		return nil, fmt.Errorf("%s is not a file of this user's alone", path)
	}
	return io.ReadAll(f)
}

// npmInputs is a SHA-256 of what npm reads to say its registry: its
// program (its real path, its package.json and its built-in npmrc), the
// Node that PATH names (its real path and identity: its prefix decides
// the global npmrc npm reads when npm_config_globalconfig and PREFIX do
// not), the
// whole environment (npm_config_* variables, HOME, PATH, the variables an
// npmrc names), the working folder, the user and global npmrc files (as
// npm named them), and in the working folder and each folder above it the
// .npmrc, package.json and node_modules, which decide which project's
// .npmrc npm reads (its own folder's, a workspace root's above it). A
// file's content is hashed, or that it is absent. "" when npm is not the
// npm package's npm-cli.js (its built-in npmrc is then not known): the
// answer is not kept.
func npmInputs(npm string, files []string) string {
	real, err := filepath.EvalSymlinks(npm)
	if err != nil || filepath.Base(real) != "npm-cli.js" {
		return ""
	}
	cwd, err := os.Getwd()
	if err != nil {
		return ""
	}
	h := sha256.New()
	add := func(parts ...string) {
		for _, p := range parts {
			fmt.Fprintf(h, "%d:%s", len(p), p)
		}
	}
	content := func(path string) {
		b, err := os.ReadFile(path)
		switch {
		case err == nil:
			add(path, "file", string(b))
		case errors.Is(err, fs.ErrNotExist):
			add(path, "absent")
		default:
			add(path, "unreadable", err.Error())
		}
	}
	pkg := filepath.Dir(filepath.Dir(real))
	add("npm", real)
	add("node", fileIdentity("node"))
	content(filepath.Join(pkg, "package.json"))
	content(filepath.Join(pkg, "npmrc"))
	env := os.Environ()
	slices.Sort(env)
	add(env...)
	add("cwd", cwd)
	for _, f := range files {
		content(f)
	}
	for dir := cwd; ; dir = filepath.Dir(dir) {
		content(filepath.Join(dir, ".npmrc"))
		content(filepath.Join(dir, "package.json"))
		fi, err := os.Stat(filepath.Join(dir, "node_modules"))
		add("node_modules", fmt.Sprint(err == nil && fi.IsDir()))
		if dir == filepath.Dir(dir) {
			break
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// fileIdentity is the real path of the program name as PATH resolves it,
// with its size, mode and modification time ("absent" when there is
// none): a program relinked or replaced has another.
func fileIdentity(name string) string {
	path, err := exec.LookPath(name)
	if err != nil {
		return "absent"
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "unresolved: " + err.Error()
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "unreadable: " + err.Error()
	}
	return fmt.Sprintf("%s %d %o %d", real, fi.Size(), fi.Mode(), fi.ModTime().UnixNano())
}

func npmEnv(registry, cache string) map[string]string {
	return map[string]string{"npm_config_registry": registry, "npm_config_cache": cache,
		"npm_config_update_notifier": "false", "npm_config_fund": "false", "npm_config_audit": "false",
		"npm_config_prefer_offline": "true"} // a cached package starts without asking the registry
}

// npmInstalled reads what npx installed in cache to run args: the folder
// npx itself installs them in (_npx/HASH, HASH its own: the first 16 hex
// digits of the SHA-512 of the package specs, one a line, in npx's order;
// see npxDir) and the version of each package named (from its installed
// package.json). The folder returned is that install's tree
// (node_modules), which the box then shows read-only and resolution
// hashes. "" when npx has installed nothing for args yet, or when args
// name a local folder (npx's folder for it depends on npx's own
// resolution).
func npmInstalled(cache, command string, args []string) (string, map[string]string) {
	dir := npxFolder(cache, command, args)
	if dir == "" {
		return "", nil
	}
	specs, _ := npxSpecs(args)
	tree := filepath.Join(dir, "node_modules")
	if fi, err := os.Lstat(tree); err != nil || !fi.IsDir() {
		return "", nil
	}
	packages := map[string]string{}
	for _, s := range specs {
		name := npmName(s)
		var manifest struct {
			Version string `json:"version"`
		}
		b, err := os.ReadFile(filepath.Join(tree, filepath.FromSlash(name), "package.json"))
		if err != nil || json.Unmarshal(b, &manifest) != nil {
			return "", nil
		}
		packages[name] = manifest.Version
	}
	return tree, packages
}

// npxFolder is the folder npx installs args in under cache (npxDir), ""
// when args name no package or a local one.
func npxFolder(cache, _ string, args []string) string {
	specs, err := npxSpecs(args)
	if err != nil || len(specs) == 0 {
		return ""
	}
	return npxDir(cache, specs)
}

// npxSpecs returns the package specs npx installs to run args (npx's or
// npm exec's): each --package (-p) value, or else the first argument that
// is not an option. nil when there is none, or when one names a local
// folder or file.
// An option not known here is an error: it may take a value that would
// be taken for the package, or change where npx installs (--cache,
// --prefix), and the folder pinned would then be one npx never runs.
func npxSpecs(args []string) ([]string, error) {
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
		case "-c", "--call":
			return nil, fmt.Errorf("npx's %s runs a shell command, which may install and run any package: toolgate cannot pin what runs; name the package to run instead (npx -y PKG@VERSION)", a)
		case "-y", "--yes", "--no", "-q", "--quiet", "--silent":
			continue
		}
		if strings.HasPrefix(a, "-") {
			return nil, fmt.Errorf("npx's option %q is not one toolgate knows to take no value (-y, --yes, --no, -q, --quiet, --silent, -p/--package, -c/--call): it cannot name the folder npx installs in, so it cannot pin what runs; leave the option out", a)
		}
		first = a
		break
	}
	if len(specs) == 0 && first != "" {
		specs = []string{first}
	}
	if len(specs) == 0 {
		return nil, fmt.Errorf("npx is given no package to run (%q): toolgate cannot pin what it would run; name it (npx -y PKG@VERSION)", args)
	}
	for _, s := range specs {
		if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "/") || strings.HasPrefix(s, "~") || strings.HasPrefix(s, "file:") {
			return nil, nil
		}
	}
	if len(specs) > 1 {
		for _, s := range specs {
			for _, r := range s {
				if r < ' ' || r > '~' {
					return nil, fmt.Errorf("npx's package %q holds %q: npx names its install folder after its packages sorted in its locale's order, which toolgate follows for printable ASCII only, so it could not pin what runs; write the specs in ASCII or give one package", s, r)
				}
			}
		}
	}
	return specs, nil
}

// npxDir is the folder npx installs specs in under cache: npm's libnpmexec
// names it by the first 16 hex digits of the SHA-512 of the specs, sorted
// by localeCompare(b, "en") and joined by newlines (npxCompare is that order;
// npxSpecs refuses several specs it cannot order).
func npxDir(cache string, specs []string) string {
	s := slices.SortedFunc(slices.Values(specs), npxCompare)
	sum := sha512.Sum512([]byte(strings.Join(s, "\n")))
	return filepath.Join(cache, "_npx", hex.EncodeToString(sum[:])[:16])
}

// npxPrimary is the order of the printable ASCII characters in Unicode's
// root collation (CLDR; ICU's "en", which npx's localeCompare uses, adds
// nothing to it), punctuation not ignored, a letter's two cases one
// place: what node prints for the 95 characters sorted by localeCompare.
const npxPrimary = " _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789abcdefghijklmnopqrstuvwxyz"

// npxCompare orders two specs of printable ASCII as localeCompare(b, "en")
// does (ICU, tertiary strength): first by their characters' places in
// npxPrimary (a string before its longer ones), then, where those are
// equal, by case at the first place they differ (lower first).
func npxCompare(a, b string) int {
	primary := func(c byte) int {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		return strings.IndexByte(npxPrimary, c)
	}
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := cmp.Compare(primary(a[i]), primary(b[i])); c != 0 {
			return c
		}
	}
	if c := cmp.Compare(len(a), len(b)); c != 0 {
		return c
	}
	for i := range len(a) { // the same places: the same bytes, or a letter in two cases
		if a[i] != b[i] {
			return cmp.Compare(b[i], a[i]) // 'a' (0x61) before 'A' (0x41)
		}
	}
	return 0
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
// (not followed). A link must stay inside dir (resolved through an
// os.Root of it, every link on the way included) or name a read-only
// system folder (a virtual environment's python → /usr/bin/python3):
// the hash covers what it leads to only then. One that leads elsewhere
// (the writable cache beside the tree, a write grant) is an error, and so
// is anything that is neither a folder, a regular file nor a link (a
// FIFO would block the read).
func hashTree(dir string) (string, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	h := sha256.New()
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(h, "%s\x00%s\x00", filepath.ToSlash(rel), d.Type())
		switch {
		case d.IsDir():
		case d.Type()&fs.ModeSymlink != 0:
			target, err := root.Readlink(rel)
			if err != nil {
				return err
			}
			if !linkStays(root, rel, target) {
				return fmt.Errorf("the link %s leads out of %s (to %s)", p, dir, target)
			}
			io.WriteString(h, target)
		case d.Type().IsRegular():
			fi, err := d.Info()
			if err != nil {
				return err
			}
			f, err := root.OpenFile(rel, readFlags, 0)
			if err != nil {
				return err
			}
			if at, err := f.Stat(); err != nil || !at.Mode().IsRegular() || !os.SameFile(fi, at) {
				f.Close()
				return fmt.Errorf("%s changed while it was read", p) // a link or a FIFO swapped in
			}
			fh := sha256.New()
			_, err = io.Copy(fh, f)
			f.Close()
			if err != nil {
				return err
			}
			h.Write(fh.Sum(nil))
		default:
			return fmt.Errorf("%s is neither a file, a folder nor a link (%s)", p, d.Type())
		}
		io.WriteString(h, "\n")
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// linkStays reports whether the link rel (with target) in root leads to
// a place inside root or to a read-only system folder (visibleSystem),
// resolved one name at a time through root, each link on the way
// followed (so that one that leads out counts). A link inside root that
// leads nowhere stays.
func linkStays(root *os.Root, rel, target string) bool {
	system := func(p string) bool {
		p = filepath.Clean(p)
		return slices.ContainsFunc(visibleSystem, func(s string) bool { return within(p, s) })
	}
	if filepath.IsAbs(target) {
		return system(target)
	}
	var at []string // the folder reached, inside root
	if d := filepath.ToSlash(filepath.Dir(rel)); d != "." {
		at = strings.Split(d, "/")
	}
	todo := strings.Split(target, "/")
	for hops := 0; len(todo) > 0; {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(at) == 0 {
				return false
			}
			at = at[:len(at)-1]
			continue
		}
		p := strings.Join(append(slices.Clone(at), c), "/")
		fi, err := root.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return true
		}
		if err != nil {
			return false
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			at = append(at, c)
			continue
		}
		if hops++; hops > 40 {
			return false
		}
		t, err := root.Readlink(p)
		if err != nil {
			return false
		}
		if filepath.IsAbs(t) {
			return system(strings.Join(append([]string{t}, todo...), "/"))
		}
		todo = append(strings.Split(t, "/"), todo...)
	}
	return true
}

// unpinnable is the resolution of an install that cannot be pinned (err
// says why): a tree that differs at each look, so that its upstream is
// quarantined at its next listing and stays so until its cache folder is
// removed.
func unpinnable(packages map[string]string, err error) *trust.Resolved {
	return &trust.Resolved{Packages: packages, Tree: fmt.Sprintf("%s%d: %v", trust.Unpinnable, time.Now().UnixNano(), err)}
}

// pipIndex is the package index pip uses on this machine: PIP_INDEX_URL,
// or else pip's configured global.index-url; "" when neither is set (pip's
// default index then needs its hosts in network:).
func pipIndex(ctx context.Context) (string, error) {
	if v := os.Getenv("PIP_INDEX_URL"); v != "" {
		return v, nil
	}
	out, err := exec.CommandContext(ctx, "pip3", "config", "get", "global.index-url").Output()
	if err != nil {
		return "", nil // not set, or no pip: no index of its own
	}
	return strings.TrimSpace(string(out)), nil
}

func pipxEnv(index, cache string) map[string]string {
	env := map[string]string{"PIPX_HOME": cache, "PIPX_BIN_DIR": filepath.Join(cache, "bin"),
		"PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1",
		"PYTHONDONTWRITEBYTECODE": "1"} // the installed tree stays as pip left it: what the pin hashes
	if index != "" {
		env["PIP_INDEX_URL"] = index
	}
	return env
}

// pipxInstalled reads what pipx run installed in cache to run args: the
// virtual environment pipx itself reuses (.cache/HASH, HASH its own: the
// first 15 hex digits of the SHA-256 of the spec, the Python, the pip and
// the venv arguments; see pipxVenv) and the version of every distribution
// installed in it (its *.dist-info/METADATA). The folder returned is the
// environment, which the box then shows read-only and resolution hashes
// whole.
func pipxInstalled(cache, command string, args []string) (string, map[string]string) {
	venv := pipxVenv(cache, command, args)
	if venv == "" {
		return "", nil
	}
	sites, _ := filepath.Glob(filepath.Join(venv, "lib", "python*", "site-packages", "*.dist-info", "METADATA"))
	if len(sites) == 0 {
		return "", nil
	}
	packages := map[string]string{}
	for _, m := range sites {
		b, err := os.ReadFile(m)
		if err != nil {
			return "", nil
		}
		var name, version string
		for _, line := range strings.Split(string(b), "\n") {
			if line == "" {
				break // the headers end
			}
			if v, ok := strings.CutPrefix(line, "Name: "); ok {
				name = strings.TrimSpace(v)
			} else if v, ok := strings.CutPrefix(line, "Version: "); ok {
				version = strings.TrimSpace(v)
			}
		}
		if name != "" {
			packages[name] = version
		}
	}
	return venv, packages
}

// pipxVenv is the folder under cache where pipx run (command) keeps the
// environment for args, named as pipx names it; "" when args are not a
// pipx run, or one whose folder cannot be named (pipxRun).
func pipxVenv(cache, command string, args []string) string {
	key, python, err := pipxRun(args)
	if err != nil || key == nil {
		return ""
	}
	if python == "" {
		if python = pipxPython(command); python == "" {
			return ""
		}
	}
	h := sha256.New()
	io.WriteString(h, key[0]+python+key[1]+key[2])
	return filepath.Join(cache, ".cache", hex.EncodeToString(h.Sum(nil))[:15])
}

// pipxRun reads a pipx run's args as pipx's _get_temporary_venv_path
// takes them: the spec, the pip arguments and the venv arguments, each
// joined (key), and the --python given ("": pipx's own). An error says
// why the folder cannot be named: args that are not pipx run (options
// before run included), an option not known here, --no-cache or --pypackages (a new folder at
// each start, or none), shell quoting in --pip-args, or a --python pipx
// would resolve on its own rather than take as written: pipx takes a file
// or a name on PATH as written, but asks the py launcher first when there
// is one, and fetches a Python for a bare version (3.12) if told to.
func pipxRun(args []string) (key []string, python string, err error) {
	if len(args) == 0 || args[0] != "run" {
		return nil, "", fmt.Errorf("toolgate knows only pipx run as an upstream's launcher, its options after run (%q): options before it (-q, -v, --global) or another command could install and run what it cannot pin; write pipx run PKG", args)
	}
	var spec, index, pipArgs, app string
	var venvArgs []string
	editable := false
	for i := 1; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(a, "=")
		switch name {
		case "--spec", "--python", "--index-url", "-i", "--pip-args":
			if !hasValue {
				if i+1 >= len(args) {
					return nil, "", fmt.Errorf("pipx's option %s has no value", a)
				}
				i++
				value = args[i]
			}
			switch name {
			case "--spec":
				spec = value
			case "--python":
				python = value
			case "--pip-args":
				pipArgs = value
			default:
				index = value
			}
			continue
		case "--no-cache", "--pypackages":
			return nil, "", fmt.Errorf("pipx's option %s installs anew at each start (or in the working folder): nothing can be pinned; leave it out", name)
		case "--system-site-packages":
			venvArgs = append(venvArgs, a)
			continue
		case "--editable", "-e":
			editable = true
			continue
		case "--verbose":
			continue
		case "--":
			if i+1 < len(args) {
				app = args[i+1]
			}
		default:
			if strings.HasPrefix(a, "-") {
				return nil, "", fmt.Errorf("pipx's option %q is not one toolgate knows (--spec, --python, --index-url, --pip-args, --system-site-packages, --editable, --verbose): it cannot name the folder pipx installs in, so it cannot pin what runs; leave the option out", a)
			}
			app = a
		}
		break
	}
	if app == "" {
		return nil, "", errors.New("pipx run names no package")
	}
	if spec == "" {
		spec = app
	}
	if python != "" && !pipxTakesAsWritten(python) {
		return nil, "", fmt.Errorf("pipx's --python %q is neither a file's absolute path nor a program on PATH (with no py launcher there): pipx would resolve it on its own, and the folder it installs in cannot be named; give the interpreter's path", python)
	}
	var pip []string
	if index != "" {
		pip = append(pip, "--index-url", index)
	}
	if pipArgs != "" {
		if strings.ContainsAny(pipArgs, "'\"\\") {
			return nil, "", fmt.Errorf("pipx's --pip-args %q holds shell quoting, which toolgate does not split as pipx does; leave the quotes out", pipArgs)
		}
		pip = append(pip, strings.Fields(pipArgs)...)
	}
	if editable {
		pip = append(pip, "--editable")
	}
	return []string{spec, strings.Join(pip, ""), strings.Join(venvArgs, "")}, python, nil
}

// pipxTakesAsWritten says whether pipx uses --python as written, and so
// hashes it so: an existing file (the launcher starts in an empty folder:
// an absolute path), or a program name found on PATH when there is no py
// launcher on PATH (which pipx asks first).
func pipxTakesAsWritten(python string) bool {
	if filepath.IsAbs(python) {
		fi, err := os.Stat(python)
		return err == nil && fi.Mode().IsRegular()
	}
	if strings.Contains(python, "/") {
		return false
	}
	if _, err := exec.LookPath("py"); err == nil {
		return false
	}
	_, err := exec.LookPath(python)
	return err == nil
}

// pipxCheck refuses a pipx run whose folder toolgate cannot name (see
// pipxRun), or whose Python it cannot tell: no --python, and command's
// first line names no interpreter it can read.
func pipxCheck(command string, args []string) error {
	key, python, err := pipxRun(args)
	if err != nil || key == nil || python != "" {
		return err
	}
	if pipxPython(command) == "" {
		return fmt.Errorf("toolgate cannot tell which Python %s runs on (its first line names no interpreter it can find), so it cannot name the folder pipx installs in to pin what runs: give --python as an absolute path", command)
	}
	return nil
}

// pipxPython is the Python pipx runs on, which its cache folders are
// named by (sys.executable): the interpreter its #! line names, as named,
// or found on PATH through env.
func pipxPython(command string) string {
	path, err := exec.LookPath(command)
	if err != nil {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	head := make([]byte, 256)
	n, _ := io.ReadFull(f, head)
	f.Close()
	line, _, _ := strings.Cut(string(head[:n]), "\n")
	fields := strings.Fields(strings.TrimPrefix(line, "#!"))
	if !strings.HasPrefix(line, "#!") || len(fields) == 0 {
		return ""
	}
	if filepath.Base(fields[0]) != "env" {
		return fields[0]
	}
	if len(fields) < 2 {
		return ""
	}
	p, err := exec.LookPath(fields[len(fields)-1])
	if err != nil {
		return ""
	}
	return p
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
	if err != nil {
		return "", "", nil, err
	}
	if reg != "" {
		u, err := url.Parse(reg)
		if err != nil || u.Hostname() == "" {
			return "", "", nil, fmt.Errorf("%q is not a registry URL", reg)
		}
		port := u.Port()
		if port == "" {
			port = "443"
			if u.Scheme == "http" {
				port = "80"
			}
		}
		hostport = net.JoinHostPort(u.Hostname(), port)
	}
	if cache, err = below(filepath.Join(stateDir(), "launchers", l.name), upstream); err != nil {
		return "", "", nil, err
	}
	if err := os.MkdirAll(cache, 0o700); err != nil {
		return "", "", nil, err
	}
	if cache, err = filepath.EvalSymlinks(cache); err != nil {
		return "", "", nil, err
	}
	return hostport, cache, l.env(reg, cache), nil
}

// below returns parent/name where name names one entry strictly below
// parent: one path element, neither "." nor "..", with no NUL and at most
// 255 bytes. A folder named after an upstream is made this way only.
func below(parent, name string) (string, error) {
	if name == "." || len(name) > 255 || !filepath.IsLocal(name) || strings.ContainsAny(name, "/\x00") {
		return "", fmt.Errorf("%q cannot name a folder", name)
	}
	return filepath.Join(parent, name), nil
}
