package exec

import (
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// dryRuns are the exemptions a dry run grants, and lines that only look
// like one: the n is the value of another option (git clean -e -n, rsync
// --exclude -n), an operand after --, a word computed at run time, or an
// option the check does not know.
var dryRuns = []struct {
	line string
	want Verdict
}{
	// git clean: real dry runs.
	{"git clean -n", Allow},
	{"git clean -nd", Allow},
	{"git clean -nfdx", Allow},
	{"git clean -fdxn", Allow},
	{"git clean -fdn", Allow},
	{"git clean --dry-run -fdx", Allow},
	{"git clean -fdx --dry-run", Allow},
	{"git clean -fdx --dry", Allow},
	{"git clean -f -n", Allow},
	{"git clean -f -d -x -n", Allow},
	{"git clean -n -e keep -fdx", Allow},
	{"git clean -fdx -e '*.keep' -n", Allow},
	{"git clean -fdx --exclude=.env -n", Allow},
	{"git clean -fdx --exclude .env --dry-run", Allow},
	{"git clean -fdxekeep -n", Allow},
	{"git clean -fdx -n -- build", Allow},
	{"git clean -d", Allow},
	{"git clean", Allow},
	// git clean: the n is not the dry-run option.
	{"git clean -fdx -e -n", Ask},
	{"git clean -fdx -e-n", Ask},
	{"git clean -fdxe -n", Ask},
	{"git clean -fdxen", Ask},
	{"git clean -fden -x", Ask},
	{"git clean -fdx --exclude -n", Ask},
	{"git clean -fdx --exclude=-n", Ask},
	{"git clean -fdx --exclude=--dry-run", Ask},
	{"git clean -fdx --exclude --dry-run", Ask},
	{"git clean -fdx --excl -n", Ask},
	{"git clean -fdx -- -n", Ask},
	{"git clean -fdx --end-of-options -n", Ask},
	{"git clean -f -- --dry-run", Ask},
	{"git clean -n --no-dry-run -fdx", Ask},
	{"git clean -n --no-dry -fdx", Ask},
	{"git clean -fdx $OPT -n", Ask},
	{"git clean -fdx \"$(echo -e)\" -n", Ask},
	{"git clean -fdx --bogus -n", Ask},
	{"git clean -fdxZn", Ask},
	{"git clean -id", Ask},
	{"git clean --interactive", Ask},
	{"git clean -fdx", Ask},
	{"git clean --force", Ask},
	{"git clean --forc -d", Ask},
	{"git clean --no-force --force", Ask},
	// git rm and restore: the same for --dry-run, --cached and --staged.
	{"git rm -r -n src", Allow},
	{"git rm -r --cached src", Allow},
	{"git rm -rf --cached .", Allow},
	{"git rm --cach -r .", Allow},
	{"git rm -r src -n", Allow},
	{"git rm -r src -- -n", Ask},
	{"git rm -r src -- --cached", Ask},
	{"git rm -r --pathspec-from-file -n src", Ask},
	{"git rm -r --pathspec-from-file=--cached src", Ask},
	{"git rm -r $X -n src", Ask},
	{"git restore --staged .", Allow},
	{"git restore -S .", Allow},
	{"git restore --stage -- .", Allow},
	{"git restore -s HEAD~1 --staged -- .", Allow},
	{"git restore -sS .", Ask},
	{"git restore -s -S .", Ask},
	{"git restore --source -S .", Ask},
	{"git restore -- --staged .", Ask},
	{"git restore --staged --worktree .", Ask},
	{"git restore -SW .", Ask},
	// rsync: real dry runs.
	{"rsync -n --delete src/ dst/", Allow},
	{"rsync --dry-run --delete src/ dst/", Allow},
	{"rsync -avn --delete src/ dst/", Allow},
	{"rsync -nav --delete src/ dst/", Allow},
	{"rsync -a --delete src/ dst/ -n", Allow},
	{"rsync -a --delete --exclude '*.o' -n src/ dst/", Allow},
	{"rsync -a --delete --exclude='-n*' -n src/ dst/", Allow},
	{"rsync -a --delete -e ssh -n src/ host:dst/", Allow},
	{"rsync -a --delete -essh -n src/ host:dst/", Allow},
	{"rsync -a --delete --backup-dir old -n src/ dst/", Allow},
	{"rsync -aP --delete-after --dry-run src/ dst/", Allow},
	{"rsync -a -i -h --stats --delete -n src/ dst/", Allow},
	{"rsync -a --remove-source-files -n src/ dst/", Allow},
	// rsync: the n is not the dry-run option.
	{"rsync -a --delete --exclude '-n*' /tmp/empty/ ./", Ask},
	{"rsync -a --delete --exclude -n /tmp/empty/ ./", Ask},
	{"rsync -a --delete --include -n src/ dst/", Ask},
	{"rsync -a --delete --backup-dir -n a/ b/", Ask},
	{"rsync -a --delete --suffix -n a/ b/", Ask},
	{"rsync -a --delete --filter -n a/ b/", Ask},
	{"rsync -a --delete -f -n a/ b/", Ask},
	{"rsync -a --delete -f-n a/ b/", Ask},
	{"rsync -a --delete -e -n a/ b/", Ask},
	{"rsync -a --delete -en a/ b/", Ask},
	{"rsync -a --delete -ave -n a/ b/", Ask},
	{"rsync -a --delete --rsh -n a/ b/", Ask},
	{"rsync -a --delete -T -n a/ b/", Ask},
	{"rsync -a --delete --temp-dir -n a/ b/", Ask},
	{"rsync -a --delete -B -n a/ b/", Ask},
	{"rsync -a --delete --log-file -n a/ b/", Ask},
	{"rsync -a --delete --files-from -n a/ b/", Ask},
	{"rsync -a --delete --exclude-from -n a/ b/", Ask},
	{"rsync -a --delete --include-from -n a/ b/", Ask},
	{"rsync -a --delete --password-file -n a/ b/", Ask},
	{"rsync -a --delete --partial-dir -n a/ b/", Ask},
	{"rsync -a --delete --compare-dest -n a/ b/", Ask},
	{"rsync -a --delete --copy-dest -n a/ b/", Ask},
	{"rsync -a --delete --link-dest -n a/ b/", Ask},
	{"rsync -a --delete --chmod -n a/ b/", Ask},
	{"rsync -a --delete --chown -n a/ b/", Ask},
	{"rsync -a --delete --max-size -n a/ b/", Ask},
	{"rsync -a --delete --min-size -n a/ b/", Ask},
	{"rsync -a --delete --exclude=-n a/ b/", Ask},
	{"rsync -a --delete --exclude=--dry-run a/ b/", Ask},
	{"rsync -a --delete --exclude --dry-run a/ b/", Ask},
	{"rsync -a --delete -- -n a/ b/", Ask},
	{"rsync -a --delete --no-such-option -n a/ b/", Ask},
	{"rsync -a --delete -Zn a/ b/", Ask},
	{"rsync -a --delete $OPTS -n a/ b/", Ask},
	{"rsync -n --no-dry-run --delete a/ b/", Ask},
	{"rsync -a --dry --delete a/ b/", Ask},
	{"rsync -a --delete a/ b/", Ask},
}

func TestDryRunExemptionParsesOptions(t *testing.T) {
	for _, c := range dryRuns {
		for _, l := range wrapped(c.line) {
			if f := CheckShell(l); f.Verdict != c.want {
				t.Errorf("%q: %s (%s), want %s", l, f.Verdict, f.Reason, c.want)
			}
		}
	}
}

// TestGitCleanAllowedKeepsFiles runs every git clean line the check allows
// with the real git, in a repository holding an untracked file, an
// untracked folder and an ignored file: none may be gone.
func TestGitCleanAllowedKeepsFiles(t *testing.T) {
	git, err := osexec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	for _, c := range dryRuns {
		if c.want != Allow || !isGitClean(c.line) {
			continue
		}
		dir := t.TempDir()
		if out, err := osexec.Command(git, "init", "-q", dir).CombinedOutput(); err != nil {
			t.Fatalf("git init: %v: %s", err, out)
		}
		files := []string{"untracked.txt", "build/out.o", "keep", ".env", "-n"}
		for _, f := range append(files, ".gitignore") {
			p := filepath.Join(dir, f)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(".env\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cmd := osexec.Command("bash", "-c", c.line)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, _ := cmd.CombinedOutput()
		for _, f := range files {
			if _, err := os.Lstat(filepath.Join(dir, f)); err != nil {
				t.Errorf("%q (allowed) removed %s: %s", c.line, f, out)
			}
		}
	}
}

// TestGitCleanAskedDeletes runs the spoofed spellings with the real git:
// each one does delete, which is why it must ask.
func TestGitCleanAskedDeletes(t *testing.T) {
	git, err := osexec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	for _, line := range []string{"git clean -fdx -e -n", "git clean -fdxen", "git clean -fdx --exclude=-n",
		"git clean -fdx --excl -n", "git clean -n --no-dry-run -fdx", "git clean -fdx -e-n"} {
		dir := t.TempDir()
		if out, err := osexec.Command(git, "init", "-q", dir).CombinedOutput(); err != nil {
			t.Fatalf("git init: %v: %s", err, out)
		}
		victim := filepath.Join(dir, "build", "out.o")
		if err := os.MkdirAll(filepath.Dir(victim), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(victim, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := osexec.Command("bash", "-c", line)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, _ := cmd.CombinedOutput()
		if _, err := os.Lstat(victim); err == nil {
			t.Errorf("%q kept build/out.o, so the case proves nothing: %s", line, out)
		}
		if f := CheckShell(line); f.Verdict != Ask {
			t.Errorf("%q: %s, want ask", line, f.Verdict)
		}
	}
}

func isGitClean(line string) bool { return strings.HasPrefix(line, "git clean") }

func TestParseOptions(t *testing.T) {
	cases := []struct {
		args     []string
		spec     optionSpec
		set      []string
		operands []string
		known    bool
	}{
		{[]string{"-fdx", "src"}, gitCleanOptions(), []string{"force", "-d", "-x"}, []string{"src"}, true},
		{[]string{"-fe", "x", "-n"}, gitCleanOptions(), []string{"force", "exclude", "dry-run"}, nil, true},
		{[]string{"-fex", "-n"}, gitCleanOptions(), []string{"force", "exclude", "dry-run"}, nil, true},
		{[]string{"-fe", "-n"}, gitCleanOptions(), []string{"force", "exclude"}, nil, true},
		{[]string{"--excl=a", "--dry"}, gitCleanOptions(), []string{"exclude", "dry-run"}, nil, true},
		{[]string{"--no-dry-run"}, gitCleanOptions(), nil, nil, true},
		{[]string{"--no-exclude"}, gitCleanOptions(), nil, nil, false},
		{[]string{"-f", "--", "-n"}, gitCleanOptions(), []string{"force"}, []string{"-n"}, true},
		{[]string{"--"}, gitCleanOptions(), nil, nil, true},
		{[]string{"-"}, gitCleanOptions(), nil, []string{"-"}, true},
		{[]string{"-e"}, gitCleanOptions(), []string{"exclude"}, nil, true},
		{[]string{"--exclude"}, gitCleanOptions(), []string{"exclude"}, nil, true},
		{[]string{"--q"}, gitRmOptions(), []string{"quiet"}, nil, true},
		{[]string{"--pathspec"}, gitRmOptions(), nil, nil, false},
		{[]string{"--dry"}, rsyncOptions(), nil, nil, false},
		{[]string{"-avn", "a", "b"}, rsyncOptions(), []string{"-a", "-v", "dry-run"}, []string{"a", "b"}, true},
		{[]string{"-e", "ssh -p 22", "a"}, rsyncOptions(), []string{"-e"}, []string{"a"}, true},
		{[]string{"", "-n"}, rsyncOptions(), []string{"dry-run"}, []string{""}, false},
	}
	for _, c := range cases {
		p := parseOptions(c.args, c.spec)
		on := 0
		for _, v := range p.set {
			if v {
				on++
			}
		}
		for _, s := range c.set {
			if !p.set[s] {
				t.Errorf("%q: %s not set (%v)", c.args, s, p.set)
			}
		}
		if on != len(c.set) || p.known != c.known || len(p.operands) != len(c.operands) {
			t.Errorf("%q: set %v, operands %q, known %v; want %v, %q, %v", c.args, p.set, p.operands, p.known, c.set, c.operands, c.known)
			continue
		}
		for i := range c.operands {
			if p.operands[i] != c.operands[i] {
				t.Errorf("%q: operands %q, want %q", c.args, p.operands, c.operands)
			}
		}
	}
}
