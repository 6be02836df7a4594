package exec

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/sandbox"
	"github.com/toolgate/toolgate/tool"
)

type corpusCase struct {
	ID        string         `json:"id"`
	Category  string         `json:"category"`
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
	Expected  string         `json:"expected"`
	Why       string         `json:"why"`
	Setup     []string       `json:"setup"`
}

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

// TestAttackCorpus runs the command and code cases of the shared attack
// corpus through the tools, always in the sandbox: a "deny" must end in a
// structured error (the check's permission_denied, the sandbox's
// sandbox_violation or timeout, or invalid arguments) and reach nothing
// on the host; an "allow" must succeed.
func TestAttackCorpus(t *testing.T) {
	parent := t.TempDir()
	ws := filepath.Join(parent, "ws")
	home := filepath.Join(parent, "home")
	for _, d := range []string{ws, filepath.Join(home, ".ssh")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(ws, ".env"):                      "TOKEN=WS-ENV-SECRET\n",
		filepath.Join(ws, "README.md"):                 "# project\n",
		filepath.Join(home, ".ssh", "id_rsa"):          "HOME-KEY\n",
		filepath.Join(home, ".ssh", "authorized_keys"): "ssh-ed25519 AAAA HOME-AUTH\n",
		filepath.Join(parent, "outside.txt"):           "OUTSIDE-SECRET\n",
	}
	for p, c := range files {
		if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var accepted atomic.Int32
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	tools := toolMap(t, Options{Root: ws, Limits: sandbox.Limits{Wall: 3 * time.Second, Memory: 256 << 20}})
	expand := func(s string) string {
		s = repeatRe.ReplaceAllStringFunc(s, func(m string) string {
			sub := repeatRe.FindStringSubmatch(m)
			n, _ := strconv.Atoi(sub[2])
			return strings.Repeat(sub[1], n)
		})
		return strings.NewReplacer("$HOSTPORT", strconv.Itoa(ln.Addr().(*net.TCPAddr).Port),
			"$HOSTPID", strconv.Itoa(os.Getpid()), "$WS_PARENT", parent, "$WS", ws, "$HOME", home).Replace(s)
	}
	ran := 0
	for _, c := range loadCorpus(t) {
		if (c.Tool != "execute_command" && c.Tool != "run_code") || c.Category == "rate_limit_loop" {
			continue // the engine's loop guard is tested with the engine
		}
		ran++
		t.Run(c.ID, func(t *testing.T) {
			if len(c.Setup) > 0 {
				t.Fatalf("setup lines for command cases are not interpreted yet: %v", c.Setup)
			}
			args := map[string]any{}
			for k, v := range c.Arguments {
				if s, ok := v.(string); ok {
					v = expand(s)
				}
				args[k] = v
			}
			raw, _ := json.Marshal(args)
			res, err := tools[c.Tool].Run(context.Background(), tool.Call{Name: c.Tool, Args: raw})
			if err != nil {
				res = tool.ErrorResult(tool.AsError(err))
			}
			text := res.Text()
			for p, content := range files {
				if strings.Contains(text, strings.TrimSpace(content)) && !strings.HasPrefix(p, ws) {
					t.Fatalf("the result shows %s:\n%s", p, text)
				}
			}
			if c.Expected == "allow" {
				if res.Error != nil {
					t.Fatalf("expected success (%s), got:\n%s", c.Why, text)
				}
				if out := res.Structured.(Output); out.ExitCode != 0 {
					t.Fatalf("exit %d:\n%s", out.ExitCode, text)
				}
				return
			}
			if res.Error == nil {
				out, _ := res.Structured.(Output)
				if out.ExitCode == 127 && strings.Contains(out.Stderr, "not found") {
					t.Logf("contained: the program is not installed here (%s)", strings.TrimSpace(out.Stderr))
					return
				}
				t.Fatalf("expected a denial (%s), got a result:\n%s", c.Why, text)
			}
			switch res.Error.Type {
			case tool.PermissionDenied, tool.SandboxViolation, tool.Timeout, tool.InvalidArguments, tool.TooLarge:
			default:
				t.Fatalf("denial of type %s: %s", res.Error.Type, res.Error.Text())
			}
			if res.Error.Message == "" || res.Error.Suggestion == "" {
				t.Fatalf("denial without message or suggestion: %#v", res.Error)
			}
			t.Logf("%s: %s", res.Error.Type, res.Error.Message)
		})
	}
	if ran < 25 {
		t.Fatalf("only %d command cases in the corpus", ran)
	}
	for p, content := range files {
		if b, err := os.ReadFile(p); err != nil || string(b) != content {
			t.Errorf("%s changed: %q %v", p, b, err)
		}
	}
	if n := accepted.Load(); n != 0 {
		t.Fatalf("the host listener accepted %d connections from the sandbox", n)
	}
}

func toolMap(t *testing.T, o Options) map[string]tool.Tool {
	t.Helper()
	list, err := Tools(o)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]tool.Tool{}
	for _, x := range list {
		m[x.Definition().Name] = x
	}
	return m
}

func call(t *testing.T, tl tool.Tool, ctx context.Context, args any) tool.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tl.Run(ctx, tool.Call{Name: tl.Definition().Name, Args: raw})
	if err != nil {
		return tool.ErrorResult(tool.AsError(fmt.Errorf("run: %w", err)))
	}
	return res
}
