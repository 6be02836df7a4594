package exec

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// stop is what the sandbox stopped, read from a command's error output.
type stop struct {
	what     string // "a write to /etc/x, outside the workspace"
	path     string // the path concerned, when the message names one
	evidence string // the line that shows it
}

// containment reads a failed command's error output for the marks the
// sandbox leaves when it stops something: a write to the read-only system
// or a protected file, an operation it forbids, a network that is not there,
// or a path that exists on the host but is hidden from the sandbox. It
// returns what was stopped, or ok false. A command that merely failed (a
// missing file in the workspace, a failing test) shows none of these and
// stays an ordinary result.
func containment(stderr []byte, root string, network bool) (stop, bool) {
	for _, line := range strings.Split(string(stderr), "\n") {
		if len(line) > 4096 {
			line = line[:4096]
		}
		lower := strings.ToLower(line) // Node writes "EROFS: read-only file system"
		switch {
		case strings.Contains(lower, "read-only file system"):
			return readOnlyWrite(line, root), true
		case strings.Contains(lower, "operation not permitted"):
			return stop{what: "an operation the sandbox forbids", evidence: line}, true
		case !network && networkMark().MatchString(line):
			return stop{what: "network access (there is no network in this sandbox)", evidence: line}, true
		}
		if p, ok := complaintPath(line, "o such file or directory"); ok && hiddenFromSandbox(p, root) {
			return stop{what: "access to " + p + ", which the sandbox hides", path: p, evidence: line}, true
		}
		if p, ok := complaintPath(line, "Permission denied"); ok && outside(p, root) {
			return stop{what: "access to " + p + ", outside the workspace", path: p, evidence: line}, true
		}
	}
	return stop{}, false
}

// refusedWrite reports whether a command's error output shows a write the
// sandbox refused: a "read-only file system" message naming a path outside
// the workspace root, or a guarded entry of it (a relative path is taken
// from the working folder dir). Any other such message (a test suite
// exercising EROFS, a log quoting one) is the command's own business.
func refusedWrite(stderr []byte, root, dir string, g *guard) bool {
	if !bytes.Contains(bytes.ToLower(stderr), []byte("read-only file system")) {
		return false
	}
	for _, line := range strings.Split(string(stderr), "\n") {
		if !strings.Contains(strings.ToLower(line), "read-only file system") {
			continue
		}
		p := readOnlyPath(line)
		switch {
		case p == "":
		case outside(p, root):
			return true
		case filepath.IsAbs(p):
			if g.protects(filepath.Clean(p)) || g.protects(filepath.Join(g.root, mustRel(root, p))) {
				return true
			}
		default:
			if q := filepath.Join(dir, p); outside(q, g.root) || g.protects(q) {
				return true
			}
		}
	}
	return false
}

// mustRel is p relative to root ("." if it is not below it).
func mustRel(root, p string) string {
	rel, err := filepath.Rel(root, filepath.Clean(p))
	if err != nil {
		return "."
	}
	return rel
}

// proxyHint is said when a command with a network failed to reach a host
// by itself: the program ignored the proxy.
const proxyHint = "the network is reachable only through the HTTP(S) proxy in HTTP_PROXY and HTTPS_PROXY: " +
	"a program that ignores them (raw sockets, its own DNS lookups, some HTTP clients) can resolve and reach nothing; " +
	"use a client that honours them (curl, wget, git, pip, npm, Python's urllib or requests) or give it the proxy explicitly"

// readOnlyWrite describes a write the read-only file system refused, naming
// the path when the line does.
func readOnlyWrite(line, root string) stop {
	p := readOnlyPath(line)
	s := stop{path: p, evidence: line}
	switch {
	case p == "":
		s.what = "a write outside the workspace or to a protected file (the file system there is read-only)"
	case outside(p, root):
		s.what = "a write to " + p + ", outside the workspace (everything but the workspace and /tmp is read-only)"
	case p == ".." || strings.HasPrefix(p, "../"): // relative to a working folder we do not know
		s.what = "a write to " + p + ", outside the workspace or to a protected file (read-only)"
	default:
		s.what = "a write to " + p + ", a protected file of the workspace (it is read-only)"
	}
	return s
}

// readOnlyPath finds the path in a "read-only file system" message as
// programs print it: before the message, quoted or not (coreutils, bash,
// dash, git, sed: "touch: cannot touch '/etc/x': Read-only file system",
// "sh: 1: cannot create /etc/x: Read-only file system"), or quoted after
// it (Python "[Errno 30] Read-only file system: '/etc/x'", Node "EROFS:
// read-only file system, open '/etc/x'", zsh). An unquoted word is a path
// only if it holds a "/".
func readOnlyPath(line string) string {
	for _, re := range readOnlyRE() {
		if m := re.FindStringSubmatch(line); m != nil {
			for _, g := range m[1:] {
				if g != "" {
					return g
				}
			}
		}
	}
	return ""
}

var readOnlyRE = sync.OnceValue(func() []*regexp.Regexp {
	return []*regexp.Regexp{
		regexp.MustCompile(`(?i) to (?:'([^']+)'|‘([^’]+)’); [^:]*: read-only file system`), // mv across file systems
		regexp.MustCompile(`(?i)(?:'([^']+)'|"([^"]+)"|‘([^’]+)’|([^\s'"‘’]*/[^\s'"‘’]*)): read-only file system`),
		regexp.MustCompile(`(?i)read-only file system(?::|, \w+) (?:'([^']+)'|"([^"]+)"|‘([^’]+)’|(/\S*))`),
	}
})

var networkMark = compiled(`(?i)network is unreachable|could not resolve host|temporary failure in name resolution|name or service not known|no address associated with hostname|getaddrinfo (enotfound|eai_again)|nodename nor servname|failed to establish a new connection|connection refused`)

// complaintPath finds the path of an error as tools print it, for the
// messages "No such file or directory" and "Permission denied":
// "cat: /root/x: No such file or directory",
// "ls: cannot access '/root/x': Permission denied",
// "FileNotFoundError: [Errno 2] No such file or directory: '/root/x'",
// "Error: ENOENT: no such file or directory, open '/root/x'".
func complaintPath(line, msg string) (string, bool) {
	if !strings.Contains(line, msg) {
		return "", false
	}
	for _, re := range complaintRE() {
		if m := re.FindStringSubmatch(line); m != nil {
			return m[1], true
		}
	}
	return "", false
}

var complaintRE = sync.OnceValue(func() []*regexp.Regexp {
	return []*regexp.Regexp{
		regexp.MustCompile(`(?:No such file or directory|Permission denied): '([^']+)'`),
		regexp.MustCompile(`cannot (?:access|open|stat|create|remove) '([^']+)': (?:No such file or directory|Permission denied)`),
		regexp.MustCompile(`(?:^|: )(/[^:]+): (?:No such file or directory|Permission denied)`),
		regexp.MustCompile(`(?:ENOENT: no such file or directory|EACCES: permission denied), \w+ '([^']+)'`),
	}
})

// outside reports whether p is an absolute path outside the workspace.
func outside(p, root string) bool {
	if !filepath.IsAbs(p) {
		return false
	}
	rel, err := filepath.Rel(root, filepath.Clean(p))
	return err != nil || rel == ".." || strings.HasPrefix(rel, "../")
}

// hiddenFromSandbox reports whether p is an absolute path outside the
// workspace that exists on the host: the sandbox's minimal view hid it.
func hiddenFromSandbox(p, root string) bool {
	if !outside(p, root) {
		return false // inside the workspace (or relative): really missing
	}
	_, err := os.Lstat(p)
	return err == nil
}
