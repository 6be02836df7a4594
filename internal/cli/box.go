package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate/audit"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/mcpclient"
	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/sandbox/egress"
	"github.com/toolgate/toolgate/tool"
	"github.com/toolgate/toolgate/trust"
)

// A box runs one stdio upstream in the command sandbox (package sandbox,
// Native.Start), as its isolation says: docs/isolation.md.
type box struct {
	iso     *isolation
	homes   []string // the machine's home folders: never shown
	native  *sandbox.Native
	proxy   *egress.Proxy  // nil: no network at all
	auditor engine.Auditor // nil: no audit log
	pins    *trust.Pins    // nil: no pin file; kill_after holds the upstream there
	log     *slog.Logger
	require string // the policy's sandbox.require: the least level the server starts at

	mu      sync.Mutex
	running *boxed          // the process of the current session
	refused int             // refusals in the current session
	calls   map[string]bool // system calls refused in the current session
}

// newBox makes the box of iso's upstream; native starts its processes.
func newBox(iso *isolation, native *sandbox.Native, homes []string, auditor engine.Auditor, pins *trust.Pins, log *slog.Logger) (*box, error) {
	b := &box{iso: iso, native: native, homes: homes, auditor: auditor, pins: pins, log: log}
	if len(iso.network)+len(iso.private) > 0 || iso.registry != "" {
		pol, err := iso.egressPolicy(b.decided)
		if err != nil {
			return nil, err
		}
		if b.proxy, err = egress.NewProxy(egress.ProxyConfig{Policy: pol}); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// Close ends the connections its egress proxy still serves.
func (b *box) Close() error {
	if b.proxy != nil {
		return b.proxy.Close()
	}
	return nil
}

// boxLimits are the box's limits: no wall-clock time (the server lives as
// long as its session), CPU time per process that a long-lived server
// does not reach, the memory and processes of the isolation block.
func (iso *isolation) limits() sandbox.Limits {
	return sandbox.Limits{Wall: 24 * time.Hour, CPU: 10000 * time.Hour, Memory: iso.memory, Processes: iso.processes, OpenFiles: 4096}
}

// launch is the upstream's mcpclient.Launcher.
func (b *box) launch(_ context.Context, c *mcpclient.Config) (io.ReadWriteCloser, error) {
	// The protected configuration of each write grant that guards it, read
	// once, through the grant opened once: mounted read-only (spec) and
	// watched (guardedAutoRun).
	configs, roots, err := guardedConfigs(c.Name, b.iso)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, r := range roots {
			r.Close()
		}
	}()
	spec, cleanup, err := b.spec(c, configs)
	if err != nil {
		return nil, err
	}
	// The auto-run entries missing from the write grants cannot be covered
	// by a mount, and a nested one that a mount covers can be renamed away
	// with the folder above it: any that appears while the server runs (or
	// as it ended) in place of what was there is moved out.
	var missing []autoRunEntry
	for _, w := range b.iso.write {
		if !b.iso.config[w] {
			m, err := guardedAutoRun(w, roots[w], configs[w])
			if err != nil {
				cleanup()
				return nil, grantError(c.Name, w, err)
			}
			missing = append(missing, m...)
		}
	}
	var seq int
	quarantine, err := below(filepath.Join(stateDir(), "quarantine"), c.Name)
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("upstream %s: %w", c.Name, err)
	}
	check := func() {
		for _, m := range planted(missing, quarantine, &seq) {
			b.refusal(boxRefusal{Target: m.target, Reason: "auto_run", Grant: m.entry.grant}, m.rule())
		}
	}
	stopWatch := func() {}
	if len(missing) > 0 {
		if stopWatch, err = watchAutoRun(missing, check); err != nil {
			cleanup()
			return nil, fmt.Errorf("upstream %s: watching its write grants: %w", c.Name, err)
		}
	}
	// A new session counts from here: what the upstream does while it
	// starts (a runtime probing, a refused connection) belongs to it, so
	// nothing is reset once Start returns.
	b.mu.Lock()
	b.running, b.refused, b.calls = nil, 0, map[string]bool{}
	b.mu.Unlock()
	// The process lives until the session closes it (or the gateway
	// exits: the sandbox kills it with the thread that started it), not
	// as long as the connect call's context.
	// The sandbox measures what held before the server execs, and does
	// not start it below the policy's level (that is the only measurement:
	// no probe command runs first).
	spec.Require = cmp.Or(b.require, sandbox.LevelFull)
	p, err := b.native.Start(context.Background(), spec, c.Stderr)
	if err != nil {
		stopWatch()
		cleanup()
		if l, ok := sandbox.LevelOf(err); ok {
			return nil, boxLevelError(l, spec.Require, c.Name)
		}
		return nil, boxStartError(err, spec.Require, c.Name)
	}
	if l := sandbox.Classify(p.Protections); l.Level != sandbox.LevelFull && b.log != nil {
		b.log.Warn("upstream runs in a box of a lower level, as the policy accepts", "upstream", c.Name, "level", l.Level, "missing", strings.Join(l.Missing, ", "))
	}
	go func() {
		<-p.Done()
		stopWatch()
		if len(missing) > 0 {
			check() // what it planted as it ended
		}
	}()
	bx := &boxed{p: p, cleanup: cleanup, upstream: c.Name, iso: b.iso}
	b.mu.Lock()
	b.running = bx
	held := b.iso.killAfter > 0 && b.refused >= b.iso.killAfter
	b.mu.Unlock()
	if held { // kill_after was reached while it started: refusal had none to stop
		bx.stop(fmt.Sprintf("its box refused %d accesses in one session (isolation.kill_after) as it started", b.iso.killAfter))
	}
	return bx, nil
}

// decided records a refusal of the upstream's egress proxy: an audit
// record isolation:UPSTREAM, outcome denied, with the host and the rule;
// after kill_after of them in one session the upstream is stopped (the
// next call starts it again, counting from zero).
func (b *box) decided(d egress.Decision) {
	if d.Allowed || d.Reason == egress.DialFailed || d.Reason == egress.DNSFailed || d.Reason == egress.LimitExceeded {
		return
	}
	b.refusal(boxRefusal{Target: net.JoinHostPort(d.Host, strconv.Itoa(d.Port)), Reason: string(d.Reason)}, "network: "+string(d.Reason)+": "+d.Detail)
}

// boxRefusal is the arguments of an isolation:UPSTREAM audit record: what
// was refused (a host:port, the path of an auto-run entry it created, a
// system call) and why (the egress proxy's reason, auto_run, syscall),
// from which toolgate trust suggest works out a grant.
type boxRefusal struct {
	Target string `json:"target"`
	Reason string `json:"reason"`
	Grant  string `json:"grant,omitempty"` // the write grant an auto-run entry was created in
}

// refusedCall audits a system call the sandbox refused, once per call and
// session (a runtime probing what it may do would flood the log). It does
// not count toward kill_after: runtimes try such calls as a matter of
// course (Go's net.Interfaces, a Node start-up), and stopping a server
// for them would stop well-behaved ones; the refusals that count are
// connections and auto-run files, which a server makes on purpose.
func (b *box) refusedCall(call string) {
	b.mu.Lock()
	seen := b.calls[call]
	if b.calls != nil {
		b.calls[call] = true
	}
	b.mu.Unlock()
	if seen {
		return
	}
	// Off the sandbox's supervisor, which holds the call until it returns.
	go b.audit(boxRefusal{Target: call, Reason: "syscall"}, "seccomp: the system call "+call+" is refused in the box")
}

// audit writes an isolation:UPSTREAM record of a refused access.
func (b *box) audit(r boxRefusal, rule string) {
	if b.auditor == nil {
		return
	}
	args, _ := json.Marshal(r)
	rec := audit.Record{Tool: "isolation:" + b.iso.upstream, Arguments: args, Decision: audit.DecisionDeny, Rule: rule, Mode: "isolation", Outcome: audit.OutcomeDenied}
	if err := b.auditor.Append(context.Background(), rec); err != nil && b.log != nil {
		b.log.Error("audit log write failed", "err", err)
	}
}

// refusal audits one refused access; after kill_after of them in one
// session it stops the upstream and holds it in the pin file (every tool
// blocked until toolgate trust approve UPSTREAM/*).
func (b *box) refusal(r boxRefusal, rule string) {
	name := b.iso.upstream
	b.audit(r, rule)
	b.mu.Lock()
	b.refused++
	stop := b.refused == b.iso.killAfter
	running := b.running
	b.mu.Unlock()
	if !stop {
		return
	}
	why := fmt.Sprintf("its box refused %d accesses in one session (isolation.kill_after), the last: %s", b.iso.killAfter, rule)
	if b.log != nil {
		b.log.Warn("upstream stopped and held: too many refused accesses in one session", "upstream", name, "refusals", b.iso.killAfter)
	}
	if b.pins != nil {
		if err := b.pins.Hold(name, why, time.Now()); err != nil && b.log != nil {
			b.log.Error("holding the upstream in the pin file failed", "upstream", name, "err", err)
		}
	}
	if running != nil {
		running.stop(why)
	}
}

// spec is the sandbox spec of the upstream's command, and what to remove
// once it is gone; configs holds the protected configuration of each
// write grant that guards it (grantConfigs).
func (b *box) spec(c *mcpclient.Config, configs map[string][]policy.ConfigPath) (sandbox.Spec, func(), error) {
	iso := b.iso
	// Paths in the command line are given with their folders' links
	// resolved: the box shows the real folders only.
	argv := append([]string{c.Command}, c.Args...)
	for i, a := range argv {
		if i == 0 && !strings.Contains(a, "/") {
			continue
		}
		if !filepath.IsAbs(a) {
			if c.Dir == "" {
				continue
			}
			a = filepath.Join(c.Dir, a)
		}
		if _, err := os.Lstat(a); err != nil {
			continue
		}
		if dir, err := filepath.EvalSymlinks(filepath.Dir(a)); err == nil {
			argv[i] = filepath.Join(dir, filepath.Base(a))
		}
	}
	spec := sandbox.Spec{Argv: argv, Limits: iso.limits(), PrivateHome: true}
	cleanup := func() {}
	// The working folder: c.Dir inside a write grant (checked at load), else
	// an empty folder of the upstream's own (newBoxFolder), removed when it
	// ends, or by the next gateway's start if this one is killed.
	if c.Dir != "" {
		dir, _ := filepath.EvalSymlinks(c.Dir)
		for _, w := range iso.write {
			if within(dir, w) {
				if fi, err := os.Stat(w); err == nil && fi.IsDir() {
					spec.Root, spec.Dir = w, dir
					break
				}
			}
		}
	}
	if spec.Root == "" {
		root, release, err := newBoxFolder()
		if err != nil {
			return spec, cleanup, err
		}
		spec.Root, cleanup = root, release
	}
	for _, w := range iso.write {
		if w != spec.Root {
			spec.Writable = append(spec.Writable, w)
		}
		if !iso.config[w] {
			spec.ReadOnly = append(spec.ReadOnly, autoRunEntries(w, configs[w])...)
		}
	}
	switch {
	case iso.installed != "":
		// Installed: the whole cache is read-only, its root a mount point,
		// so that nothing in it (the install's own folder included) can be
		// renamed away and replaced; the launcher's scratch folders in it
		// are writable mounts, and the install a read-only one beneath.
		spec.ReadOnly = append(spec.ReadOnly, iso.cache)
		spec.Writable = append(spec.Writable, iso.scratch...)
		spec.ReadOnly = append(spec.ReadOnly, iso.installed)
	case iso.cache != "":
		spec.Writable = append(spec.Writable, iso.cache)
	}
	spec.ReadOnly = append(spec.ReadOnly, iso.read...)
	spec.ReadOnly = append(spec.ReadOnly, programPaths(c, b.homes, spec.ReadOnly, spec.Writable)...)
	spec.Env = boxEnv(c.Env, iso.pass)
	for _, k := range slices.Sorted(maps.Keys(iso.cacheEnv)) {
		if _, set := c.Env[k]; !set {
			spec.Env = append(spec.Env, k+"="+iso.cacheEnv[k])
		}
	}
	if b.proxy != nil {
		spec.Network = sandbox.Network{Dial: b.proxy.Dial}
	}
	spec.Refused = b.refusedCall
	return spec, cleanup, nil
}

// grantConfigs returns the protected configuration of the write grant
// opened as root: the entries at its top (policy.ConfigPaths: .git,
// .vscode, .mcp.json, …) and the nested configuration of the folders
// below it (policy.NestedConfigPaths: a virtual environment's pip.conf, a
// package's .npmrc, one level down and in the package folders it declares
// as a workspace, at any depth). An error is a declaration that cannot be
// expanded (*policy.WorkspaceError): the upstream is then not started.
func grantConfigs(root *os.Root) ([]policy.ConfigPath, error) {
	nested, err := policy.NestedConfigPaths(root)
	if err != nil {
		return nil, err
	}
	return slices.Concat(policy.ConfigPaths(), nested), nil
}

// guardedConfigs opens each write grant of iso that guards its
// configuration (not config: true) and returns its protected
// configuration (grantConfigs, and what links at its top lead to:
// linkedConfigs), and the grants opened, for the caller to close. An
// error says which grant cannot be guarded and why (grantError), or which
// link (linkedConfigs).
func guardedConfigs(upstream string, iso *isolation) (map[string][]policy.ConfigPath, map[string]*os.Root, error) {
	configs, roots := map[string][]policy.ConfigPath{}, map[string]*os.Root{}
	fail := func(err error) (map[string][]policy.ConfigPath, map[string]*os.Root, error) {
		for _, r := range roots {
			r.Close()
		}
		return nil, nil, err
	}
	for _, w := range iso.write {
		if !iso.config[w] {
			r, err := os.OpenRoot(w)
			if err != nil {
				return fail(grantError(upstream, w, err))
			}
			roots[w] = r
			if configs[w], err = grantConfigs(r); err != nil {
				return fail(grantError(upstream, w, err))
			}
		}
	}
	if err := linkedConfigs(upstream, iso, configs, roots); err != nil {
		return fail(err)
	}
	return configs, roots, nil
}

// linkedConfigs adds to configs (grantConfigs of each write grant that
// guards it, opened in roots) what a link at the top of such a grant
// leads to in a write grant (another, or its own by an absolute path or
// .. out and back): policy.NestedConfigPaths looks only where a link
// leads inside its grant, and the grant the folder lies in guards it only
// at its first level, yet programs run in the link's folder read the
// configuration there (npm in grant/lib reads lib/.npmrc: the .npmrc of
// the folder it leads to). So the configuration of that folder, by the
// markers it holds (policy.FolderConfigPaths), is guarded in the grant it
// lies in, the innermost when grants nest (a/ and a/b/ both hold a/b/x:
// a/b/ says what may change there), as that grant's own (mounted
// read-only, or watched while missing), and the link in its grant
// (policy.ConfigPath.Links: replaced or pointed elsewhere, it is moved
// out and made again). A link to such a folder in a grant that guards
// nothing (config: true) refuses the start: the two grants say opposite
// things of it. Links resolved inside their grant are left to
// NestedConfigPaths, links to folders no grant holds to the box (the
// upstream cannot write there).
func linkedConfigs(upstream string, iso *isolation, configs map[string][]policy.ConfigPath, roots map[string]*os.Root) error {
	for _, w := range iso.write {
		root := roots[w]
		if root == nil {
			continue // config: true
		}
		resolved := map[string]bool{} // links NestedConfigPaths followed inside the grant
		for _, c := range configs[w] {
			for _, l := range c.Links {
				resolved[l.Name] = true
			}
		}
		f, err := root.Open(".")
		if err != nil {
			return grantError(upstream, w, err)
		}
		entries, err := f.ReadDir(-1)
		f.Close()
		if err != nil {
			return grantError(upstream, w, err)
		}
		slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
		for _, e := range entries {
			if e.Type()&fs.ModeSymlink == 0 || resolved[e.Name()] {
				continue
			}
			target, err := root.Readlink(e.Name())
			if err != nil {
				return grantError(upstream, w, err)
			}
			real, err := filepath.EvalSymlinks(filepath.Join(w, e.Name()))
			if err != nil {
				continue // leads to nothing
			}
			if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
				continue
			}
			// The grant that holds the folder, the innermost.
			g := ""
			for _, h := range iso.write {
				if within(real, h) && len(h) > len(g) {
					g = h
				}
			}
			if g == "" {
				continue // a folder no grant holds
			}
			rel, err := filepath.Rel(g, real)
			if err != nil {
				return grantError(upstream, g, err)
			}
			gr := roots[g]
			if gr == nil { // config: true: opened only to look
				if gr, err = os.OpenRoot(g); err != nil {
					return grantError(upstream, g, err)
				}
			}
			found := policy.FolderConfigPaths(gr, filepath.ToSlash(rel))
			if roots[g] == nil {
				gr.Close()
				if len(found) > 0 {
					return fmt.Errorf("upstream %s: the link %s at the top of its write grant %s leads to %s, in its write grant %s, which lets it change configuration (config: true): the box cannot keep the configuration there from it while %s guards the folder the link makes part of it; give %s config: true too, remove config: true from %s, or remove the link", upstream, filepath.Join(w, e.Name()), w, real, g, w, w, g)
				}
			}
			if len(found) == 0 {
				continue
			}
			configs[g] = append(configs[g], found...)
			// The link is the entry (guardedAutoRun keeps it as its
			// Links say): what it leads to is guarded in g.
			configs[w] = append(configs[w], policy.ConfigPath{Name: e.Name(), Reason: found[0].Reason,
				Links: []policy.Link{{Name: e.Name(), Target: target}}})
		}
	}
	return nil
}

// grantError refuses to start upstream because its write grant w cannot
// be guarded (grantConfigs, guardedAutoRun), saying what to do.
func grantError(upstream, w string, err error) error {
	var we *policy.WorkspaceError
	switch {
	case errors.As(err, &we) && we.Link != "":
		return fmt.Errorf("upstream %s: its write grant %s declares a package folder the box cannot guard (%v): make %s a folder, or a relative link to a folder inside the grant, or leave it out of the workspace's package patterns, before starting the upstream", upstream, w, err, filepath.Join(w, filepath.FromSlash(we.Link)))
	case errors.As(err, &we):
		return fmt.Errorf("upstream %s: its write grant %s declares workspace packages the box cannot tell (%v): the .npmrc of each must be guarded; fix %s (a list of patterns of folders below the grant, such as packages/* or apps/**, no braces, no .. and no absolute path, matching at most %d folders) before starting the upstream", upstream, w, err, filepath.Join(w, we.File), policy.MaxWorkspaceFolders)
	}
	return fmt.Errorf("upstream %s: its write grant %s cannot be checked for auto-run entries (%v): make it readable again (chmod u+rwx) and look at what it holds before starting the upstream", upstream, w, err)
}

// autoRunEntries returns the entries of configs (grantConfigs) that exist
// in the write grant w: they are mounted read-only over it. An entry that
// is a link, or behind one, is left out (its target is what a mount would
// bring in).
func autoRunEntries(w string, configs []policy.ConfigPath) []string {
	var out []string
	for _, c := range configs {
		p := filepath.Join(w, filepath.FromSlash(c.Name))
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&os.ModeSymlink != 0 || !(fi.IsDir() || fi.Mode().IsRegular()) {
			continue
		}
		if real, err := filepath.EvalSymlinks(p); err == nil && real == p && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// visibleSystem are the host folders the sandbox shows read-only anyway.
var visibleSystem = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// programPaths returns the folders to show read-only so that the server
// starts: those of its executable (as named and resolved) and of each
// argument that names an existing file (its script), a folder inside
// node_modules widened to the folder holding node_modules (the package's
// dependencies). A folder already visible, or one the grants' rules would
// refuse (a home folder, a credential path), is left out.
func programPaths(c *mcpclient.Config, homes []string, have ...[]string) []string {
	var files []string
	if p, err := lookCommand(c.Command); err == nil {
		files = append(files, p)
		if abs, err := lookAbs(c.Command); err == nil && abs != p {
			files = append(files, abs)
		}
		files = append(files, interpreter(p)...)
	}
	for _, a := range c.Args {
		if !filepath.IsAbs(a) {
			if c.Dir == "" {
				continue
			}
			a = filepath.Join(c.Dir, a)
		}
		if fi, err := os.Stat(a); err == nil && fi.Mode().IsRegular() {
			files = append(files, filepath.Clean(a))
			if real, err := filepath.EvalSymlinks(a); err == nil && real != a {
				files = append(files, real)
			}
		}
	}
	var out []string
	for _, f := range files {
		dir := filepath.Dir(f)
		if i := strings.Index(dir+"/", "/node_modules/"); i >= 0 {
			dir = dir[:i]
		}
		if dir == "/" || dir == "" || slices.ContainsFunc(visibleSystem, func(s string) bool { return within(dir, s) }) {
			continue
		}
		if slices.ContainsFunc(slices.Concat(append(have, out)...), func(h string) bool { return within(dir, h) }) {
			continue
		}
		if !safeToShow(dir, homes) {
			continue
		}
		out = append(out, dir)
	}
	return out
}

// interpreter returns the interpreter a script names on its #! line, as
// found (through PATH for #!/usr/bin/env NAME) and with its links
// resolved: npx is such a script, and the node it runs may live outside
// the system folders (nvm's, a downloaded one).
func interpreter(script string) []string {
	f, err := os.Open(script)
	if err != nil {
		return nil
	}
	head := make([]byte, 256)
	n, _ := io.ReadFull(f, head)
	f.Close()
	line, _, _ := strings.Cut(string(head[:n]), "\n")
	rest, ok := strings.CutPrefix(line, "#!")
	if !ok {
		return nil
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return nil
	}
	name := fields[0]
	if filepath.Base(name) == "env" {
		name = ""
		for _, f := range fields[1:] {
			if !strings.HasPrefix(f, "-") && !strings.Contains(f, "=") {
				name = f
				break
			}
		}
	}
	if name == "" {
		return nil
	}
	var out []string
	if p, err := lookCommand(name); err == nil {
		out = append(out, p)
	}
	if abs, err := lookAbs(name); err == nil && !slices.Contains(out, abs) {
		out = append(out, abs)
	}
	return out
}

// safeToShow reports whether a folder may be shown read-only: not a home
// folder itself, not a credential path and not holding one.
func safeToShow(dir string, homes []string) bool {
	for _, h := range homes {
		if within(h, dir) {
			return false
		}
		for _, cp := range policy.CredentialPaths() {
			cred := filepath.Join(h, filepath.FromSlash(cp.Name))
			if within(dir, cred) || within(cred, dir) {
				return false
			}
		}
	}
	return true
}

// lookAbs finds a command on PATH without resolving links.
func lookAbs(command string) (string, error) {
	if strings.Contains(command, "/") {
		return filepath.Abs(command)
	}
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		p := filepath.Join(d, command)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return filepath.Abs(p)
		}
	}
	return "", os.ErrNotExist
}

// boxEnv is the server's whole environment: its declared variables, the
// gateway's variables named by --env, and PATH, LANG and TZ from the
// gateway (HOME and TMPDIR are the box's own, set by the sandbox).
func boxEnv(declared map[string]string, pass []string) []string {
	var env []string
	seen := map[string]bool{}
	add := func(k, v string) {
		if !seen[k] {
			seen[k] = true
			env = append(env, k+"="+v)
		}
	}
	keys := make([]string, 0, len(declared))
	for k := range declared {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		add(k, declared[k])
	}
	for _, k := range pass {
		if v, ok := os.LookupEnv(k); ok {
			add(k, v)
		}
	}
	for _, k := range []string{"PATH", "LANG", "TZ"} {
		if v, ok := os.LookupEnv(k); ok {
			add(k, v)
		}
	}
	return env
}

// boxed is a running boxed upstream: its streams, Close that stops it, and
// Exit that says why it ended (mcpclient.Exiter).
type boxed struct {
	p        *sandbox.Process
	cleanup  func()
	once     sync.Once
	upstream string
	iso      *isolation

	mu      sync.Mutex
	stopped string // why the box stopped it (kill_after)
}

// stop kills the upstream for the reason why.
func (b *boxed) stop(why string) {
	b.mu.Lock()
	b.stopped = why
	b.mu.Unlock()
	b.p.Kill()
}

// Exit says why the upstream ended, once it has (it waits a moment for
// the outcome: the end of its output comes first): a sandbox_violation
// naming the limit it ran into, or the refusals that stopped it; nil when
// it is still running or ended of itself.
func (b *boxed) Exit() *tool.Error {
	select {
	case <-b.p.Done():
	case <-time.After(2 * time.Second):
		return nil
	}
	out, err := b.p.Wait()
	b.mu.Lock()
	stopped := b.stopped
	b.mu.Unlock()
	switch {
	case stopped != "":
		return tool.Errorf(tool.SandboxViolation, "upstream %s was stopped and its tools held: %s", b.upstream, stopped).
			WithSuggestion("do not retry; tell the user: toolgate trust suggest %s shows the refused accesses, toolgate trust approve %s/* releases it", b.upstream, b.upstream).
			WithDetail("upstream", b.upstream)
	case err != nil || len(out.LimitsHit) == 0:
		return nil
	}
	limit := out.LimitsHit[0]
	value := map[string]string{"memory": fmt.Sprintf("%d MiB", b.iso.memory>>20), "processes": strconv.Itoa(b.iso.processes), "cpu": "1 CPU"}[limit]
	return tool.Errorf(tool.SandboxViolation, "upstream %s ended in its box: it ran into its %s limit (%s)", b.upstream, limit, value).
		WithSuggestion("retry once (the upstream starts again); if it keeps failing, tell the user it needs a higher isolation.limits.%s or is misbehaving", limit).
		WithDetail("upstream", b.upstream).WithDetail("limit", limit)
}

func (b *boxed) Read(p []byte) (int, error)  { return b.p.Stdout.Read(p) }
func (b *boxed) Write(p []byte) (int, error) { return b.p.Stdin.Write(p) }

// Pipes are the upstream's stdout and stdin (mcpclient.Piped).
func (b *boxed) Pipes() (stdout, stdin *os.File) { return b.p.Stdout, b.p.Stdin }

// Close closes the server's input, gives it two seconds to end, then kills
// everything in its box, and waits.
func (b *boxed) Close() error {
	b.once.Do(func() {
		b.p.Stdin.Close()
		select {
		case <-b.p.Done():
		case <-time.After(2 * time.Second):
			b.p.Kill()
		}
		b.p.Wait()
		b.p.Stdout.Close()
		b.cleanup()
	})
	return nil
}

// boxUpstreams checks the isolation of each stdio upstream of p and gives
// the strict ones their box (Config.Launch); a refused setting is a usage
// error. pins is the pin file (toolgate's own files may not be granted);
// require is the policy's sandbox.require: the level each box must reach
// here, measured as the server starts and before it execs, for it to
// start at all.
// It returns a function that closes the boxes, and what the box of each
// stdio upstream adds to its pinned identity.
func boxUpstreams(p proxySetup, pins, require string, auditor engine.Auditor) (func(), map[string]boxIdentity, error) {
	own := []string{stateDir(), pins}
	for _, f := range []string{p.policy, p.audit} {
		if f != "" && f != "off" {
			own = append(own, f)
		}
	}
	for i, f := range own {
		if f != "" {
			if abs, err := filepath.Abs(f); err == nil {
				own[i] = abs
				if real, err := filepath.EvalSymlinks(abs); err == nil {
					own = append(own, real)
				}
			}
		}
	}
	rules := boxRules{homes: machineHomes(), own: own}
	var pinFile *trust.Pins
	if pins != "" {
		pinFile = trust.OpenPins(pins)
	}
	native := &sandbox.Native{Executable: sandboxHelper()}
	var boxes []*box
	var swept bool
	grants := map[string]boxIdentity{}
	closeAll := func() {
		for _, b := range boxes {
			b.Close()
		}
		native.Close()
	}
	for i := range p.cfgs {
		c := &p.cfgs[i]
		if c.Command == "" {
			continue
		}
		var f *isolationFile
		if i < len(p.isos) {
			f = p.isos[i]
		}
		iso, err := checkIsolation(c.Name, c.Command, f, p.boxDir, p.unisolated, rules)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		iso.pass = p.passEnv
		if !iso.off {
			// Its helper starts now, while the launcher is asked for its
			// registry, the gateway starts and the spec is made: the
			// first launch takes it (sandbox.Native.WarmFor).
			native.WarmFor(iso.limits())
		}
		id := boxIdentity{grants: iso.grants(c)}
		if l := launcherOf(c.Command); l != nil && !iso.off {
			// npx and the like: a cache of their own; their registry (as
			// their own configuration names it) as an exact private:
			// host:port until the package is in the cache, then none: the
			// launcher runs offline, and what it resolved is pinned.
			hostport, cache, env, err := launcherGrants(l, c.Name)
			if err != nil {
				closeAll()
				return nil, nil, usageErr("upstream %s: the package registry of its launcher (%s): %v", c.Name, l.name, err)
			}
			iso.cache, iso.cacheEnv = cache, env
			if l.check != nil {
				if err := l.check(c.Command, c.Args); err != nil {
					closeAll()
					return nil, nil, usageErr("upstream %s: %v", c.Name, err)
				}
			}
			var installed string
			if l.installed != nil {
				var packages map[string]string
				installed, packages = l.installed(cache, c.Command, c.Args)
				id.resolved = launcherResolution(l, cache, c.Command, c.Args, installed, packages)
			}
			if installed != "" {
				// Cached: offline, and what runs is read-only to the
				// upstream (it would otherwise change what the pin hashes).
				maps.Copy(iso.cacheEnv, l.offline)
				for _, k := range l.installOnly {
					delete(iso.cacheEnv, k)
				}
				iso.installed = installed
				if l.scratch != nil {
					iso.scratch = l.scratch(cache, installed)
				}
				for _, d := range iso.scratch {
					if err := os.MkdirAll(d, 0o700); err != nil {
						closeAll()
						return nil, nil, err
					}
				}
			} else if hostport != "" && !slices.Contains(iso.private, hostport) {
				iso.registry = hostport
			}
		}
		grants[c.Name] = id
		if iso.off {
			continue
		}
		if !swept {
			// The empty folders of the boxes of gateways that were killed
			// (their lock free), before this one makes its own.
			swept = true
			if gone := sweepBoxFolders(os.TempDir()); len(gone) > 0 && p.log != nil {
				p.log.Info("removed the box folders of gateways that are gone", "folders", gone)
			}
		}
		if c.Dir != "" {
			dir, err := filepath.EvalSymlinks(c.Dir)
			if err != nil || !slices.ContainsFunc(iso.write, func(w string) bool { return within(dir, w) }) {
				closeAll()
				return nil, nil, isolationError(c.Name, "write", c.Dir, "the server's cwd must lie in one of its write grants (or leave cwd out: it then starts in an empty folder of its own)")
			}
			if launcherOf(c.Command) != nil {
				closeAll()
				return nil, nil, isolationError(c.Name, "cwd", c.Dir, "a launcher (npx, pipx…) looks in its working folder before its cache (package.json and node_modules, .npmrc, __pypackages__), so in a write grant the server could plant what the launcher runs at its next start: leave cwd out (the launcher then starts in an empty folder of its own, made again at each start) and name paths in args absolutely")
			}
		}
		b, err := newBox(iso, native, rules.homes, auditor, pinFile, p.log)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		b.require = require
		boxes = append(boxes, b)
		c.Launch = b.launch
	}
	return closeAll, grants, nil
}

// boxStartError is the error of upstream's box that did not start (err):
// where the machine cannot give a sandbox at all (sandbox.Lasting), the
// refusal of boxLevelError, at level none; a passing shortage (out of
// processes, a helper that died) says so and that nothing ran unconfined,
// not that the machine gives no sandbox.
func boxStartError(err error, require, upstream string) error {
	switch {
	case sandbox.Lasting(err):
		return boxLevelError(sandbox.Level{Level: sandbox.LevelNone, Missing: []string{err.Error()}}, require, upstream)
	case errors.Is(err, sandbox.ErrUnavailable):
		return fmt.Errorf("upstream %s: its box could not be started just now (%w); nothing was started unconfined: try again, and if this lasts, look for what this machine is short of (processes, memory, file descriptors)", upstream, err)
	}
	return fmt.Errorf("starting upstream %s in its box: %w", upstream, err)
}

// boxLevelError refuses upstream, whose box reached only the level l here,
// below require (the policy's sandbox.require): the message names the
// levels, the layers missing and what gives them; the gateway exits 2.
// toolgate never starts a strict upstream unconfined.
func boxLevelError(l sandbox.Level, require, upstream string) error {
	detail := ""
	if len(l.Missing) > 0 {
		detail += "; missing: " + strings.Join(l.Missing, ", ")
	}
	if len(l.Remedies) > 0 {
		detail += "; to get them: " + strings.Join(l.Remedies, "; ")
	}
	accept := ""
	if l.Level == sandbox.LevelReduced && require != sandbox.LevelReduced {
		accept = ", or accept the reduced level by name in the policy (sandbox: {require: reduced})"
	}
	return &exitError{exitUsage, fmt.Errorf("upstream %s: its box needs the sandbox level %s (the policy's sandbox.require), this machine gives %s%s. toolgate never starts a strict upstream unconfined: give the machine what is missing%s, or run the upstream with isolation.mode: off and --unisolated if you accept its full authority", upstream, require, l.Level, detail, accept)}
}

// boxIdentity is what the box of a stdio upstream adds to its pinned
// identity: its grants, and what its launcher resolved (nil: no launcher
// that says).
type boxIdentity struct {
	grants   *trust.Box
	resolved func() *trust.Resolved
}

// grants is the box as the pin file records it (trust.Box).
func (iso *isolation) grants(c *mcpclient.Config) *trust.Box {
	if iso.off {
		return &trust.Box{Off: true}
	}
	b := &trust.Box{Read: iso.read, Write: iso.write, Network: iso.network, Private: iso.private, Memory: iso.memory, Processes: iso.processes}
	for w := range iso.config {
		b.Config = append(b.Config, w)
	}
	slices.Sort(b.Config)
	for k := range c.Env {
		b.Env = append(b.Env, k)
	}
	b.Env = append(b.Env, iso.pass...)
	slices.Sort(b.Env)
	return b
}

// suggestGrants turns the refusals recorded for an upstream's box into
// the isolation grants that would have allowed them, as YAML.
func suggestGrants(upstream string, recs []audit.Record) string {
	var network, private, config, never []string
	add := func(list *[]string, v string) {
		if !slices.Contains(*list, v) {
			*list = append(*list, v)
		}
	}
	for _, rec := range recs {
		var r boxRefusal
		if json.Unmarshal(rec.Arguments, &r) != nil || r.Target == "" {
			continue
		}
		switch r.Reason {
		case "auto_run":
			add(&config, r.Grant)
			continue
		case "syscall":
			add(&never, r.Target+": "+rec.Rule)
			continue
		}
		host, port, err := net.SplitHostPort(r.Target)
		if err != nil {
			continue
		}
		switch egress.Reason(r.Reason) {
		case egress.NotListed, egress.PortNotAllowed:
			if port == "80" || port == "443" {
				add(&network, host)
			} else {
				add(&network, r.Target)
			}
		case egress.PrivateAddress:
			if strings.Contains(rec.Rule, "a private address") || strings.Contains(rec.Rule, "carrier-grade NAT") {
				add(&private, r.Target)
			} else {
				add(&never, r.Target+": "+rec.Rule)
			}
		default:
			add(&never, r.Target+": "+rec.Rule)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# toolgate trust suggest %s: %d refusal(s) in the audit log. Paste what you mean to grant\n# into the isolation block of %s; nothing was changed.\n", upstream, len(recs), upstream)
	if len(network)+len(private)+len(config) > 0 {
		b.WriteString("isolation:\n")
	}
	if len(config) > 0 {
		b.WriteString("  write:   # it created auto-run files (.git, .vscode, .mcp.json…) there: grant that only if you mean it\n")
		for _, g := range config {
			fmt.Fprintf(&b, "    - {path: %q, config: true}\n", g)
		}
	}
	for _, l := range []struct {
		field string
		list  []string
	}{{"network", network}, {"private", private}} {
		if len(l.list) > 0 {
			fmt.Fprintf(&b, "  %s:\n", l.field)
			for _, v := range l.list {
				fmt.Fprintf(&b, "    - %q\n", v)
			}
		}
	}
	for _, n := range never {
		fmt.Fprintf(&b, "# no grant allows %s\n", n)
	}
	return b.String()
}
