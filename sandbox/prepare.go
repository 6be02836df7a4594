package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// DefaultPath is the PATH of a command whose Spec.Env sets none.
const DefaultPath = "/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Home is the home folder inside the sandbox: an empty, read-only folder.
// A program that writes its configuration there fails (EROFS) rather than
// appearing to succeed; caches go to /tmp (see DefaultEnv).
const Home = "/home/sandbox"

// filesystemView is Protections.Filesystem of the Linux backends.
const filesystemView = "read-only minimal system view; writable only: the workspace, the spec's writable paths, tmpfs /tmp and /dev/shm; fresh /proc, minimal /dev"

// CacheDir is where the tools' caches go inside the sandbox: a folder of
// the writable /tmp, which disappears with the command.
const CacheDir = "/tmp/.cache"

// DefaultEnv returns the variables the sandbox sets when Spec.Env does not:
// PATH, HOME, TMPDIR, LANG, TERM, the cache folders of common tools
// (XDG_CACHE_HOME and those of Go, npm, yarn, bun, pip, cargo, gradle),
// all under CacheDir since the home folder is read-only, and npm's and
// pip's checks for a newer version off (they would try the network).
func DefaultEnv() []string {
	return []string{
		"PATH=" + DefaultPath, "HOME=" + Home, "TMPDIR=/tmp", "LANG=C.UTF-8", "TERM=dumb",
		"XDG_CACHE_HOME=" + CacheDir,
		"GOCACHE=" + CacheDir + "/go-build", "GOPATH=" + CacheDir + "/go", "GOMODCACHE=" + CacheDir + "/go/pkg/mod",
		"npm_config_cache=" + CacheDir + "/npm", "YARN_CACHE_FOLDER=" + CacheDir + "/yarn",
		"BUN_INSTALL_CACHE_DIR=" + CacheDir + "/bun", "PIP_CACHE_DIR=" + CacheDir + "/pip",
		"CARGO_HOME=" + CacheDir + "/cargo", "GRADLE_USER_HOME=" + CacheDir + "/gradle",
		"npm_config_update_notifier=false", "PIP_DISABLE_PIP_VERSION_CHECK=1",
	}
}

// ProxyEnv returns the variables the sandbox sets, besides DefaultEnv,
// for a command with a proxy network: HTTP_PROXY, HTTPS_PROXY and
// ALL_PROXY (and their lower-case forms) naming the proxy at ProxyPort,
// NO_PROXY empty, and NODE_USE_ENV_PROXY (Node.js 22.21, 24 and later send
// fetch and https.get through the proxy only when it is set).
func ProxyEnv() []string { return proxyEnvAt(ProxyPort) }

// proxyEnvAt is ProxyEnv with the proxy at port (a command of a pod gets
// a port of its own: the pod's loopback is shared).
func proxyEnvAt(port int) []string {
	u := fmt.Sprintf("http://127.0.0.1:%d", port)
	return []string{"HTTP_PROXY=" + u, "HTTPS_PROXY=" + u, "http_proxy=" + u, "https_proxy=" + u,
		"ALL_PROXY=" + u, "all_proxy=" + u, "NO_PROXY=", "no_proxy=", "NODE_USE_ENV_PROXY=1"}
}

// prepared is a validated spec with defaults applied.
type prepared struct {
	Spec
	argv   []string // the argv to run (Shell turned into /bin/sh -c)
	dir    string   // absolute working folder
	env    []string // the whole environment
	limits Limits
}

// maxArg is the longest command line a spec may hold.
const maxArg = 1 << 20

// prepare checks spec and fills in its defaults. Every error wraps
// ErrInvalidSpec.
func prepare(spec Spec) (*prepared, error) {
	p := &prepared{Spec: spec, limits: spec.Limits.withDefaults()}
	switch {
	case len(spec.Argv) > 0 && spec.Shell != "":
		return nil, fmt.Errorf("%w: set Argv or Shell, not both", ErrInvalidSpec)
	case len(spec.Argv) > 0:
		if spec.Argv[0] == "" {
			return nil, fmt.Errorf("%w: empty program name", ErrInvalidSpec)
		}
		p.argv = append([]string(nil), spec.Argv...)
	case spec.Shell != "":
		p.argv = []string{"/bin/sh", "-c", spec.Shell}
	default:
		return nil, fmt.Errorf("%w: no command", ErrInvalidSpec)
	}
	total := 0
	for _, a := range p.argv {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, fmt.Errorf("%w: NUL byte in the command", ErrInvalidSpec)
		}
		total += len(a) + 1
	}
	if total > maxArg {
		return nil, fmt.Errorf("%w: the command is %d bytes (at most %d)", ErrInvalidSpec, total, maxArg)
	}
	if err := checkHostPath("Root", spec.Root); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(spec.Root); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%w: Root %q is not a folder", ErrInvalidSpec, spec.Root)
	}
	dir, err := insideRoot(spec.Root, spec.Dir)
	if err != nil {
		return nil, err
	}
	p.dir = dir
	for _, l := range [][]string{spec.Writable, spec.ReadOnly} {
		for _, w := range l {
			if err := checkHostPath("mount path", w); err != nil {
				return nil, err
			}
			if _, err := os.Stat(w); err != nil {
				return nil, fmt.Errorf("%w: mount path %q: %v", ErrInvalidSpec, w, err)
			}
		}
	}
	if err := linkedReadOnly(spec); err != nil {
		return nil, err
	}
	port := 0
	if spec.Network.Enabled() {
		port = ProxyPort
	}
	env, err := buildEnv(spec.Env, port)
	if err != nil {
		return nil, err
	}
	p.env = env
	return p, nil
}

// checkHostPath requires an absolute, clean path without NUL bytes that is
// not the file system root.
func checkHostPath(what, p string) error {
	switch {
	case p == "":
		return fmt.Errorf("%w: %s is empty", ErrInvalidSpec, what)
	case strings.IndexByte(p, 0) >= 0:
		return fmt.Errorf("%w: %s contains a NUL byte", ErrInvalidSpec, what)
	case !filepath.IsAbs(p) || filepath.Clean(p) != p:
		return fmt.Errorf("%w: %s %q is not an absolute, clean path", ErrInvalidSpec, what, p)
	case p == "/":
		return fmt.Errorf("%w: %s may not be /", ErrInvalidSpec, what)
	}
	return nil
}

// insideRoot joins root and the relative dir, refusing a dir that is
// absolute outside root or climbs out of it (lexically; the mount view
// holds nothing else of the host anyway).
func insideRoot(root, dir string) (string, error) {
	if strings.IndexByte(dir, 0) >= 0 {
		return "", fmt.Errorf("%w: Dir contains a NUL byte", ErrInvalidSpec)
	}
	if filepath.IsAbs(dir) {
		rel, err := filepath.Rel(root, filepath.Clean(dir))
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return "", fmt.Errorf("%w: Dir %q is outside Root %q", ErrInvalidSpec, dir, root)
		}
		dir = rel
	}
	clean := filepath.Clean("/" + dir) // resolves .. without climbing above "/"
	if filepath.Join(root, dir) != filepath.Join(root, clean) {
		return "", fmt.Errorf("%w: Dir %q climbs out of Root", ErrInvalidSpec, dir)
	}
	return filepath.Join(root, clean), nil
}

// buildEnv checks env and adds the defaults it lacks, and the proxy
// variables naming proxyPort when it is not 0.
func buildEnv(env []string, proxyPort int) ([]string, error) {
	out := make([]string, 0, len(env)+10)
	seen := map[string]bool{}
	for _, kv := range env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" || strings.IndexByte(kv, 0) >= 0 {
			return nil, fmt.Errorf("%w: environment entry %q is not NAME=value", ErrInvalidSpec, kv)
		}
		if seen[name] {
			return nil, fmt.Errorf("%w: environment variable %s set twice", ErrInvalidSpec, name)
		}
		seen[name] = true
		out = append(out, kv)
	}
	defaults := DefaultEnv()
	if proxyPort != 0 {
		defaults = append(defaults, proxyEnvAt(proxyPort)...)
	}
	for _, kv := range defaults {
		name, _, _ := strings.Cut(kv, "=")
		if !seen[name] {
			out = append(out, kv)
		}
	}
	return out, nil
}

// lookEnv returns the value of name in env.
func lookEnv(env []string, name string) string {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}
