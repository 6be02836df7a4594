package cli

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/toolgate/toolgate/policy"
	"github.com/toolgate/toolgate/sandbox/egress"
)

// isolationFile is the isolation block of a stdio server in the gateway
// configuration (docs/isolation.md).
type isolationFile struct {
	Mode      string       `yaml:"mode"`
	Read      []string     `yaml:"read"`
	Write     []writeGrant `yaml:"write"`
	Network   []string     `yaml:"network"`
	Private   []string     `yaml:"private"`
	Limits    *limitsFile  `yaml:"limits"`
	KillAfter *int         `yaml:"kill_after"`
}

// writeGrant is a write entry: a path, or {path: …, config: true} to let
// the server change the auto-run files inside it too.
type writeGrant struct {
	Path   string `yaml:"path"`
	Config bool   `yaml:"config"`
}

// UnmarshalYAML reads a path or a {path, config} mapping.
func (g *writeGrant) UnmarshalYAML(b []byte) error {
	var s string
	if err := yaml.Unmarshal(b, &s); err == nil {
		g.Path = s
		return nil
	}
	type plain writeGrant
	var p plain
	if err := yaml.UnmarshalWithOptions(b, &p, yaml.Strict(), yaml.DisallowUnknownField()); err != nil {
		return fmt.Errorf("a write entry is a path or {path: PATH, config: true}: %w", err)
	}
	*g = writeGrant(p)
	return nil
}

type limitsFile struct {
	Memory    string  `yaml:"memory"`
	CPU       float64 `yaml:"cpu"`
	Processes int     `yaml:"processes"`
}

// isolation is the checked box of one stdio upstream.
type isolation struct {
	upstream  string
	off       bool
	read      []string          // resolved host paths, read-only
	write     []string          // resolved host paths, writable
	config    map[string]bool   // write grants whose auto-run files are writable too
	network   []string          // domains, through the egress proxy
	private   []string          // exact host:port that may resolve to a private address
	pass      []string          // names of the gateway's variables passed through (--env)
	cache     string            // a launcher's cache folder (writable until installed), under toolgate's state folder
	registry  string            // a launcher's registry, host:port, while its package is not cached (not pinned: the resolution is)
	cacheEnv  map[string]string // the launcher's variables: its registry and cache
	installed string            // what the launcher installed in its cache, once it has: read-only
	scratch   []string          // once installed, what the launcher still writes in its read-only cache
	memory    int64
	processes int
	killAfter int
}

// Defaults of the box (docs/isolation.md).
const (
	defaultBoxMemory    = 512 << 20
	defaultBoxProcesses = 256
	defaultKillAfter    = 20
)

// isolationError is a refused setting: exit 2 with the upstream, the
// field, the value and the rule.
func isolationError(upstream, field, value, rule string) error {
	return usageErr("upstream %s: isolation.%s: %q: %s", upstream, field, value, rule)
}

// boxRules are what the grants are checked against: the home folders of
// the machine (machineHomes) and toolgate's own files (policy, audit log,
// pins, state).
type boxRules struct {
	homes, own []string
}

// checkIsolation checks an isolation block (nil: the defaults) of the
// stdio upstream named upstream whose command is command; rel is the
// folder relative paths are taken against; unisolated is --unisolated.
func checkIsolation(upstream, command string, f *isolationFile, rel string, unisolated bool, rules boxRules) (*isolation, error) {
	if f == nil {
		f = &isolationFile{}
	}
	iso := &isolation{upstream: upstream, config: map[string]bool{}, memory: defaultBoxMemory,
		processes: defaultBoxProcesses, killAfter: defaultKillAfter}
	switch f.Mode {
	case "", "strict":
	case "off":
		if !unisolated {
			return nil, isolationError(upstream, "mode", f.Mode, "an unisolated upstream runs with all of the gateway's authority (its files, variables, network and processes); to allow it, also give --unisolated on the command line")
		}
		iso.off = true
		if len(f.Read)+len(f.Write)+len(f.Network)+len(f.Private) > 0 || f.Limits != nil || f.KillAfter != nil {
			return nil, isolationError(upstream, "mode", f.Mode, "grants and limits mean nothing without the box: remove them, or use mode: strict")
		}
		return iso, nil
	default:
		return nil, isolationError(upstream, "mode", f.Mode, "want strict (the default) or off")
	}
	if base := filepath.Base(command); base == "docker" || base == "podman" {
		return nil, isolationError(upstream, "mode", "strict", "command: "+base+" is refused in the box: the container runtime's socket is the host (whoever reaches it starts a privileged container); run the server's own program in the box instead (its npx, uvx or binary), or give it mode: off with --unisolated")
	}
	for _, r := range f.Read {
		p, err := checkGrant(upstream, "read", r, rel, false, rules)
		if err != nil {
			return nil, err
		}
		iso.read = append(iso.read, p)
	}
	for _, w := range f.Write {
		p, err := checkGrant(upstream, "write", w.Path, rel, true, rules)
		if err != nil {
			return nil, err
		}
		iso.write = append(iso.write, p)
		if w.Config {
			iso.config[p] = true
		}
	}
	for _, d := range f.Network {
		if err := checkDomain(upstream, "network", d); err != nil {
			return nil, err
		}
		iso.network = append(iso.network, d)
	}
	for _, hp := range f.Private {
		if err := checkPrivate(upstream, hp); err != nil {
			return nil, err
		}
		iso.private = append(iso.private, hp)
	}
	if l := f.Limits; l != nil {
		if l.Memory != "" {
			n, err := parseBytes(l.Memory)
			if err != nil || n < 16<<20 {
				return nil, isolationError(upstream, "limits.memory", l.Memory, "want a size of 16MiB or more, e.g. 512MiB or 2GiB")
			}
			iso.memory = n
		}
		if l.CPU != 0 && l.CPU != 1 {
			return nil, isolationError(upstream, "limits.cpu", strconv.FormatFloat(l.CPU, 'g', -1, 64), "the box gives one processor (cpu: 1); other shares are not supported yet")
		}
		if l.Processes < 0 || l.Processes > 4096 {
			return nil, isolationError(upstream, "limits.processes", strconv.Itoa(l.Processes), "want 1 to 4096")
		}
		if l.Processes > 0 {
			iso.processes = l.Processes
		}
	}
	if f.KillAfter != nil {
		if *f.KillAfter < 1 {
			return nil, isolationError(upstream, "kill_after", strconv.Itoa(*f.KillAfter), "want 1 or more refused accesses")
		}
		iso.killAfter = *f.KillAfter
	}
	// The network must actually reach what it names: a proxy policy that
	// refuses an entry outright is refused now, not at the first request.
	if _, err := iso.egressPolicy(nil); err != nil {
		return nil, isolationError(upstream, "network", strings.Join(iso.network, ", "), err.Error())
	}
	return iso, nil
}

// egressPolicy is the policy of the upstream's egress proxy.
func (iso *isolation) egressPolicy(onDecision func(egress.Decision)) (*egress.Policy, error) {
	private := iso.private
	if iso.registry != "" {
		private = append(slices.Clone(private), iso.registry)
	}
	return egress.NewPolicy(egress.PolicyConfig{Allow: iso.network, Private: private, OnDecision: onDecision})
}

// systemDirs are the host's system folders: shown read-only in the box, a
// write grant may not be, hold or lie in one.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/boot", "/dev", "/proc", "/sys", "/var", "/opt", "/run", "/snap", "/nix"}

// machineHomes returns the home folders of this machine: this user's,
// /root and those under /home.
func machineHomes() []string {
	out := []string{"/root"}
	if h, err := os.UserHomeDir(); err == nil && filepath.IsAbs(h) {
		out = append(out, filepath.Clean(h))
	}
	if ents, err := os.ReadDir("/home"); err == nil {
		for _, e := range ents {
			out = append(out, filepath.Join("/home", e.Name()))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// within reports whether p is dir or lies in it (whole components).
func within(p, dir string) bool {
	if dir == "/" {
		return true
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// checkGrant checks one read or write path and returns it resolved.
func checkGrant(upstream, field, value, rel string, write bool, rules boxRules) (string, error) {
	refuse := func(rule string) (string, error) { return "", isolationError(upstream, field, value, rule) }
	if value == "" {
		return refuse("an empty path")
	}
	p := value
	if strings.HasPrefix(p, "~/") || p == "~" {
		return refuse("write the home folder out in full (and mind that a home folder itself may not be granted)")
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(rel, p)
	}
	p = filepath.Clean(p)
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return refuse("the path does not exist (a grant names an existing file or folder)")
	}
	if p == "/" || real == "/" {
		return refuse("/ is the whole machine; grant the folders the server needs")
	}
	if real != p && !within(real, filepath.Dir(p)) {
		// A grant says what it gives: a link to elsewhere is refused.
		return refuse("it is a link to " + real + ", outside the folder that holds it; grant " + real + " itself")
	}
	for _, c := range []string{p, real} {
		if c == "/tmp" || c == "/var/tmp" {
			return refuse("the shared temporary folder holds other programs' files and sockets; the box has a /tmp of its own, or grant a folder inside it")
		}
		for _, h := range rules.homes {
			if write && within(h, c) {
				return refuse("it is or holds the home folder " + h + "; grant the project folder inside it instead")
			}
		}
		for _, h := range rules.homes {
			for _, cp := range policy.CredentialPaths() {
				cred := filepath.Join(h, filepath.FromSlash(cp.Name))
				if within(c, cred) || within(cred, c) {
					return refuse(fmt.Sprintf("it is or holds %s (%s): credential paths stay invisible", cred, cp.Reason))
				}
			}
		}
		for _, o := range rules.own {
			if o != "" && (within(c, o) || within(o, c)) {
				return refuse("it is or holds toolgate's own file " + o + " (policy, audit log, pins or state); an upstream may not read or change them")
			}
		}
		if names := configComponents(c); len(names) > 0 {
			return refuse("it lies in " + names[0] + ", a protected configuration path (policy.ConfigPaths): something else runs what is written there")
		}
		if write {
			for _, s := range systemDirs {
				if within(c, s) || within(s, c) {
					return refuse("it is, holds or lies in the system folder " + s + ", which the box shows read-only")
				}
			}
		}
	}
	return real, nil
}

// configComponents returns the protected configuration names
// (policy.ConfigPaths) that p lies in, e.g. ".git" for /srv/p/.git/hooks.
func configComponents(p string) []string {
	var out []string
	parts := strings.Split(filepath.ToSlash(p), "/")
	for _, c := range policy.ConfigPaths() {
		n := strings.Split(c.Name, "/")
		for i := 0; i+len(n) <= len(parts); i++ {
			if slices.Equal(parts[i:i+len(n)], n) {
				out = append(out, c.Name)
				break
			}
		}
	}
	return out
}

// checkDomain checks a network entry: a name or "*.name", never an
// address, a range, a bare "*", or a loopback or metadata name.
func checkDomain(upstream, field, d string) error {
	refuse := func(rule string) error { return isolationError(upstream, field, d, rule) }
	host := d
	if h, port, err := net.SplitHostPort(d); err == nil {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return refuse("the port is not a number from 1 to 65535")
		}
		host = h
	}
	switch {
	case host == "*" || host == "":
		return refuse("a bare * would reach every host; name the domains the server needs")
	case strings.Contains(host, "/"):
		return refuse("an address range; name domains (network: takes names only)")
	}
	if _, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return refuse("an IP address; name domains (network: takes names only)")
	}
	name := strings.TrimPrefix(host, "*.")
	p, err := egress.NewPolicy(egress.PolicyConfig{Allow: []string{d}})
	if err != nil {
		return refuse(err.Error())
	}
	var e *egress.Error
	if _, _, err := p.CheckHost(name, 443); errors.As(err, &e) && (e.Reason == egress.MetadataAddress || e.Reason == egress.PrivateAddress) {
		return refuse("a loopback or cloud metadata destination (" + e.Detail + ")")
	}
	return nil
}

// checkPrivate checks a private entry: an exact host name and port.
func checkPrivate(upstream, hp string) error {
	refuse := func(rule string) error { return isolationError(upstream, "private", hp, rule) }
	host, port, err := net.SplitHostPort(hp)
	if err != nil || port == "" {
		return refuse("want an exact host:port, e.g. registry.corp.example:443")
	}
	if strings.Contains(host, "*") {
		return refuse("a wildcard; private takes one exact host:port")
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return refuse("an IP address; name the host (the address is checked after each lookup)")
	}
	if err := checkDomain(upstream, "private", hp); err != nil {
		return err
	}
	if _, err := egress.NewPolicy(egress.PolicyConfig{Private: []string{hp}}); err != nil {
		return refuse(err.Error())
	}
	return nil
}

// parseBytes reads a size: 512MiB, 2GiB, 1G, 1048576.
func parseBytes(s string) (int64, error) {
	num := strings.TrimRight(s, "KMGTiBkmgtib")
	unit := strings.ToLower(s[len(num):])
	n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("size %q", s)
	}
	mult := map[string]int64{"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
		"g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tib": 1 << 40}[unit]
	if mult == 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("size %q", s)
	}
	return n * mult, nil
}

// lookCommand finds a command on this machine's PATH, links resolved.
func lookCommand(command string) (string, error) {
	p, err := exec.LookPath(command)
	if err != nil {
		return "", err
	}
	if p, err = filepath.Abs(p); err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(p)
}

// writeFlag is --write PATH (repeatable).
type writeFlag struct{ grants *[]writeGrant }

func (w writeFlag) String() string {
	if w.grants == nil {
		return ""
	}
	var s []string
	for _, g := range *w.grants {
		s = append(s, g.Path)
	}
	return strings.Join(s, ",")
}

func (w writeFlag) Set(v string) error {
	*w.grants = append(*w.grants, writeGrant{Path: v})
	return nil
}

func (w writeFlag) Type() string { return "stringArray" }
