package exec

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// containment reads a failed command's error output for the marks the
// sandbox leaves when it stops something: a write to the read-only system
// or a protected file, an operation it forbids, a network that is not there,
// or a path that exists on the host but is hidden from the sandbox. It
// returns what was stopped and the line that shows it, or ok false. A
// command that merely failed (a missing file in the workspace, a failing
// test) shows none of these and stays an ordinary result.
func containment(stderr []byte, root string, network bool) (what, evidence string, ok bool) {
	for _, line := range strings.Split(string(stderr), "\n") {
		if len(line) > 4096 {
			line = line[:4096]
		}
		lower := strings.ToLower(line) // Node writes "EROFS: read-only file system"
		switch {
		case strings.Contains(lower, "read-only file system"):
			return "a write outside the workspace or to a protected file (the file system there is read-only)", line, true
		case strings.Contains(lower, "operation not permitted"):
			return "an operation the sandbox forbids", line, true
		case !network && networkMark.MatchString(line):
			return "network access (there is no network in this sandbox)", line, true
		}
		if p, ok := complaintPath(line, "o such file or directory"); ok && hiddenFromSandbox(p, root) {
			return "access to " + p + ", which the sandbox hides", line, true
		}
		if p, ok := complaintPath(line, "Permission denied"); ok && outside(p, root) {
			return "access to " + p + ", outside the workspace", line, true
		}
	}
	return "", "", false
}

var networkMark = regexp.MustCompile(`(?i)network is unreachable|could not resolve host|temporary failure in name resolution|name or service not known|no address associated with hostname|getaddrinfo (enotfound|eai_again)|nodename nor servname|failed to establish a new connection|connection refused`)

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
	for _, re := range complaintRE {
		if m := re.FindStringSubmatch(line); m != nil {
			return m[1], true
		}
	}
	return "", false
}

var complaintRE = []*regexp.Regexp{
	regexp.MustCompile(`(?:No such file or directory|Permission denied): '([^']+)'`),
	regexp.MustCompile(`cannot (?:access|open|stat|create|remove) '([^']+)': (?:No such file or directory|Permission denied)`),
	regexp.MustCompile(`(?:^|: )(/[^:]+): (?:No such file or directory|Permission denied)`),
	regexp.MustCompile(`(?:ENOENT: no such file or directory|EACCES: permission denied), \w+ '([^']+)'`),
}

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
