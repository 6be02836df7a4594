package fs

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/tool"
)

// corpusCase is one entry of the shared attack corpus.
type corpusCase struct {
	ID        string         `json:"id"`
	Category  string         `json:"category"`
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
	Expected  string         `json:"expected"`
	Why       string         `json:"why"`
	Setup     []string       `json:"setup"`
}

// corpusTools maps the corpus's generic tool names onto this set's.
var corpusTools = map[string]string{
	"read_file": "read_file", "write_file": "write_file", "edit_file": "edit_file",
	"move_file": "move_file", "delete_file": "delete_file", "list_dir": "list_directory",
	"list_directory": "list_directory", "get_file_info": "get_file_info",
	"create_directory": "create_directory", "search_files": "search_files", "apply_patch": "apply_patch",
}

// outsideMarkers are contents of files outside the root: no result may show them.
var outsideMarkers = []string{"OUTSIDE-SECRET", "PARENT-SECRET", "HOME-KEY", "root:x:0:0"}

func loadCorpus(t *testing.T) []corpusCase {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "attack-corpus-sample.json"))
	if err != nil {
		t.Fatalf("reading the attack corpus (testdata/ at the top of the repository): %v", err)
	}
	var cases []corpusCase
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	return cases
}

var repeatRe = regexp.MustCompile(`\$REPEAT\(([^,()]*),(\d+)\)`)

// expand replaces the corpus's variables in s.
func (e *env) expand(s string) string {
	s = repeatRe.ReplaceAllStringFunc(s, func(m string) string {
		sub := repeatRe.FindStringSubmatch(m)
		n, _ := strconv.Atoi(sub[2])
		return strings.Repeat(sub[1], n)
	})
	return strings.NewReplacer("$WS_PARENT", e.parent, "$WS", e.ws, "$HOME", e.home()).Replace(s)
}

func (e *env) home() string { return filepath.Join(e.parent, "home") }

func (e *env) expandAny(v any) any {
	switch x := v.(type) {
	case string:
		return e.expand(x)
	case []any:
		out := make([]any, len(x))
		for i, y := range x {
			out[i] = e.expandAny(y)
		}
		return out
	case map[string]any:
		out := map[string]any{}
		for k, y := range x {
			out[k] = e.expandAny(y)
		}
		return out
	}
	return v
}

// mapArgs renames the corpus's generic argument names to the tools' own.
func mapArgs(name string, in map[string]any) map[string]any {
	out := map[string]any{}
	var edit map[string]any
	for k, v := range in {
		switch {
		case k == "src" && name == "move_file":
			out["source"] = v
		case k == "dst" && name == "move_file":
			out["destination"] = v
		case (k == "old" || k == "new") && name == "edit_file":
			if edit == nil {
				edit = map[string]any{}
			}
			edit[k+"_string"] = v
		default:
			out[k] = v
		}
	}
	if edit != nil {
		out["edits"] = []any{edit}
	}
	return out
}

// fixture lays out the workspace the corpus assumes.
func (e *env) fixture(t *testing.T) {
	for name, content := range map[string]string{
		"README.md":   "# Project\n",
		"src/main.go": "package main\n",
		"build/out.o": "\x7fELF object\n",
		"config.yml":  "a: 1\n",
		".git/config": "[core]\n",
		".git/HEAD":   "ref: refs/heads/main\n",
		"docs/a.md":   "docs\n",
	} {
		mustWrite(t, filepath.Join(e.ws, name), content)
	}
	os.MkdirAll(filepath.Join(e.ws, ".git", "hooks"), 0o755)
}

// setupLine runs one corpus setup line. "symlink A -> B" and "hardlink A
// -> B" create links (A the new name, B what it points to), "loop: CMDS"
// returns a command that runs CMDS over and over (started by the caller),
// "swap X -> symlink T after first read" installs a hook; anything else is a
// shell line run in the workspace.
func (e *env) setupLine(t *testing.T, line string) (loop string, swap func(Location)) {
	t.Helper()
	abs := func(p string) string {
		p = e.expand(strings.TrimSpace(p))
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(e.ws, p)
	}
	switch {
	case strings.HasPrefix(line, "symlink "):
		a, b, _ := strings.Cut(strings.TrimPrefix(line, "symlink "), " -> ")
		if err := os.Symlink(e.expand(strings.TrimSpace(b)), abs(a)); err != nil {
			t.Fatalf("setup %q: %v", line, err)
		}
	case strings.HasPrefix(line, "hardlink "):
		a, b, _ := strings.Cut(strings.TrimPrefix(line, "hardlink "), " -> ")
		if err := os.Link(abs(b), abs(a)); err != nil {
			t.Fatalf("setup %q: %v", line, err)
		}
	case strings.HasPrefix(line, "loop:"):
		return e.expand(strings.TrimSpace(strings.TrimPrefix(line, "loop:"))), nil
	case strings.HasPrefix(line, "swap "):
		m := regexp.MustCompile(`^swap (\S+) -> symlink (\S+) after first read$`).FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("setup %q: unknown swap form", line)
		}
		name, target := abs(m[1]), e.expand(m[2])
		return "", func(Location) {
			os.Remove(name)
			if err := os.Symlink(target, name); err != nil {
				t.Errorf("swap: %v", err)
			}
		}
	default:
		e.sh(t, line)
	}
	return "", nil
}

// env is the environment of a setup script: WS, WS_PARENT and HOME set.
func (e *env) env() []string {
	return append(os.Environ(), "WS="+e.ws, "WS_PARENT="+e.parent, "HOME="+e.home())
}

func (e *env) sh(t *testing.T, script string) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = e.ws
	cmd.Env = e.env()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("setup %q: %v\n%s", script, err, out)
	}
}

// TestAttackCorpus runs the file-tool cases of the shared attack corpus:
// a "deny" must come back as a structured error, leave the whole tree
// (workspace and its surroundings) unchanged and show nothing from outside;
// an "allow" must succeed.
func TestAttackCorpus(t *testing.T) {
	ran := 0
	for _, c := range loadCorpus(t) {
		name, ok := corpusTools[c.Tool]
		if !ok || c.Category == "rate_limit_loop" { // command tools, and the engine's loop guard, are tested elsewhere
			continue
		}
		ran++
		t.Run(c.ID, func(t *testing.T) {
			e := newEnv(t, Options{})
			e.fixture(t)
			if _, ok := e.tools[name]; !ok {
				t.Fatalf("the set has no %s tool", name)
			}
			var loops []string
			for _, line := range c.Setup {
				loop, swap := e.setupLine(t, line)
				if loop != "" {
					e.sh(t, loop) // settle into the state the loop ends in
					loops = append(loops, loop)
				}
				if swap != nil {
					e.set.afterRead = swap
				}
			}
			before := snapshot(t, e.parent)
			args := mapArgs(name, e.expandAny(c.Arguments).(map[string]any))
			runs := 1
			// Each loop runs until the stop file exists, then ends after
			// the step it is in: killed, its shell could leave a command
			// it started running, which changed the tree after the loop
			// was settled below.
			stop := filepath.Join(t.TempDir(), "stop")
			var procs []*exec.Cmd
			for _, l := range loops {
				cmd := exec.Command("/bin/sh", "-c", `while [ ! -e "$STOP" ]; do `+l+"; done")
				cmd.Dir = e.ws
				cmd.Env = append(e.env(), "STOP="+stop)
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				procs = append(procs, cmd)
				runs = 300
			}
			for i := 0; i < runs; i++ {
				res, err := e.call(name, args)
				for _, m := range outsideMarkers {
					if strings.Contains(res.Text(), m) {
						t.Fatalf("run %d: the result shows content from outside the root (%q):\n%s", i, m, res.Text())
					}
				}
				if c.Expected == "allow" {
					if err != nil {
						t.Fatalf("expected success (%s), got %s", c.Why, err.Text())
					}
					continue
				}
				if err == nil {
					t.Fatalf("run %d: expected a denial (%s), got success:\n%s", i, c.Why, res.Text())
				}
				checkDenial(t, err)
				if i == 0 {
					t.Logf("denied: %s", err.Error())
				}
			}
			if err := os.WriteFile(stop, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			for _, p := range procs {
				p.Wait()
			}
			for _, l := range loops {
				e.sh(t, l)
			}
			if c.Expected == "deny" {
				after := snapshot(t, e.parent)
				if e.set.afterRead != nil {
					before = applySwap(t, e, before, c)
				}
				if after != before {
					t.Fatalf("a denied call changed the disk:\nbefore:\n%s\nafter:\n%s", before, after)
				}
			}
		})
	}
	if ran < 20 {
		t.Fatalf("only %d file-tool cases in the corpus", ran)
	}
}

// checkDenial asserts a denial is structured and tells what to do.
func checkDenial(t *testing.T, err *tool.Error) {
	t.Helper()
	switch err.Type {
	case tool.PermissionDenied, tool.InvalidArguments, tool.NotFound, tool.Conflict, tool.TooLarge:
	default:
		t.Fatalf("denial of type %q (want permission_denied, invalid_arguments, not_found, conflict or too_large): %s", err.Type, err.Text())
	}
	if err.Message == "" || err.Suggestion == "" {
		t.Fatalf("denial without message or suggestion: %#v", err)
	}
}

// applySwap returns the "before" snapshot as it must look after a swap
// hook replaced a file with a link (the only change allowed).
func applySwap(t *testing.T, e *env, before string, c corpusCase) string {
	m := regexp.MustCompile(`^swap (\S+) -> symlink (\S+)`).FindStringSubmatch(c.Setup[len(c.Setup)-1])
	name := m[1]
	lines := strings.Split(before, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, filepath.Join("ws", name)+" ") {
			fi, err := os.Lstat(filepath.Join(e.ws, name))
			if err != nil {
				t.Fatal(err)
			}
			target, _ := os.Readlink(filepath.Join(e.ws, name))
			lines[i] = filepath.Join("ws", name) + " " + fi.Mode().String() + " -> " + target
		}
	}
	return strings.Join(lines, "\n")
}
