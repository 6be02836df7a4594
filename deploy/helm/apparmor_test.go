package helm_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestAppArmorProfile: the chart's AppArmor profile for sandbox.mode=userns
// compiles with Debian's apparmor_parser, without loading it (-Q: no
// kernel, -K: no cache; this machine's kernel has no AppArmor): the binary
// policy names the profile. A parser older than AppArmor 4 does not know
// the userns rule (install.md: leave it out there): then it must be the
// only line refused, and the profile without it compiles. What only a node
// with AppArmor shows: that the loaded profile lets the sandbox build its
// namespaces (docs/install.md).
func TestAppArmorProfile(t *testing.T) {
	path := filepath.Join("toolgate", "files", "apparmor", "toolgate-userns")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	parser := "apparmor_parser"
	if _, err := exec.LookPath(parser); err != nil {
		parser = "/usr/sbin/apparmor_parser" // not on a user's PATH
	}
	compile := func(profile []byte) ([]byte, string, error) {
		cmd := exec.Command(parser, "-Q", "-K", "-S")
		cmd.Stdin = bytes.NewReader(profile)
		var out, errs bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errs
		err := cmd.Run()
		return out.Bytes(), errs.String(), err
	}
	bin, errs, err := compile(data)
	if err != nil {
		// Which line was refused?
		m := regexp.MustCompile(`at line (\d+):`).FindStringSubmatch(errs)
		lines := strings.Split(string(data), "\n")
		n := 0
		if m != nil {
			n, _ = strconv.Atoi(m[1])
		}
		if n < 1 || n > len(lines) || strings.TrimSpace(lines[n-1]) != "userns," {
			t.Fatalf("apparmor_parser refuses the profile: %v\n%s", err, errs)
		}
		t.Logf("this apparmor_parser predates the userns rule (line %d); compiling without it", n)
		without := strings.Join(append(lines[:n-1:n-1], lines[n:]...), "\n")
		if bin, errs, err = compile([]byte(without)); err != nil {
			t.Fatalf("apparmor_parser refuses the profile without its userns rule: %v\n%s", err, errs)
		}
	}
	if !bytes.Contains(bin, []byte("toolgate-userns")) {
		t.Fatalf("the compiled policy (%d bytes) does not name the profile toolgate-userns", len(bin))
	}
	// A broken profile is refused: the check can fail.
	if _, _, err := compile([]byte("profile broken { frobnicate, }\n")); err == nil {
		t.Fatal("apparmor_parser accepted a broken profile")
	}
}
