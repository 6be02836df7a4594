package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/provider/providertest"
)

// runModel runs `toolgate run` in ws against srv with extra environment.
func runModel(t *testing.T, ws string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"run"}, args...)...)
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "TOOLGATE_AUDIT="+filepath.Join(filepath.Dir(ws), "audit.jsonl"), "OPENAI_BASE_URL=", "ANTHROPIC_BASE_URL=")
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{out.String(), errb.String(), code}
}

// toolResults returns the text of every tool result a request carried
// (OpenAI "tool" messages, Anthropic tool_result blocks).
func toolResults(req providertest.Request) string {
	var s strings.Builder
	msgs, _ := req.Body["messages"].([]any)
	for _, m := range msgs {
		msg, _ := m.(map[string]any)
		if msg["role"] == "tool" {
			c, _ := msg["content"].(string)
			s.WriteString(c + "\n")
		}
		blocks, _ := msg["content"].([]any)
		for _, b := range blocks {
			bm, _ := b.(map[string]any)
			if bm["type"] == "tool_result" {
				parts, _ := bm["content"].([]any)
				for _, p := range parts {
					pm, _ := p.(map[string]any)
					t, _ := pm["text"].(string)
					s.WriteString(t + "\n")
				}
			}
		}
	}
	return s.String()
}

func TestRunEndToEnd(t *testing.T) {
	for _, p := range []struct{ provider, api, keyVar string }{
		{"openai", "chat", "OPENAI_API_KEY"},
		{"openai", "responses", "OPENAI_API_KEY"},
		{"anthropic", "", "ANTHROPIC_API_KEY"},
		{"gemini", "", "GEMINI_API_KEY"},
	} {
		t.Run(p.provider+p.api, func(t *testing.T) {
			ws := workspace(t)
			if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("the secret word is marmalade\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			srv := providertest.New(
				providertest.Turn{Text: "Reading the notes.", Calls: []providertest.Call{
					{Name: "read_file", Arguments: `{"path":"notes.txt"}`},
					{Name: "read_file", Arguments: `{"path":"../outside.txt"}`},
					{Name: "read_file", Arguments: `{"path":"notes.txt"}{"path":"x"}`},
				}},
				providertest.Turn{Text: "The word is marmalade."},
			)
			defer srv.Close()
			base := srv.URL + "/v1"
			switch p.provider {
			case "anthropic":
				base = srv.URL
			case "gemini":
				base = srv.URL + "/v1beta"
			}
			args := []string{"--provider", p.provider, "--base-url", base, "--model", "m1", "--root", ws, "what is the secret word?"}
			if p.api != "" {
				args = append(args, "--api", p.api)
			}
			r := runModel(t, ws, []string{p.keyVar + "=sk-do-not-print-4711"}, args...)
			if r.code != 0 {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
			}
			if r.stdout != "Reading the notes.The word is marmalade.\n" {
				t.Errorf("stdout %q", r.stdout)
			}
			if !strings.Contains(r.stderr, "toolgate run: answered after 2 request(s), 3 call(s), 2 failed") {
				t.Errorf("stderr %q", r.stderr)
			}
			if strings.Contains(r.stdout+r.stderr, "4711") {
				t.Error("the API key was printed")
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			if !strings.Contains(reqs[0].Header.Get("Authorization")+reqs[0].Header.Get("X-Api-Key")+reqs[0].Header.Get("X-Goog-Api-Key"), "sk-do-not-print-4711") {
				t.Error("the API key was not sent")
			}
			res := toolResults(reqs[1])
			if p.api == "responses" || p.provider == "gemini" {
				res = string(reqs[1].Raw)
			}
			for _, want := range []string{"marmalade", "invalid_arguments"} {
				if !strings.Contains(res, want) {
					t.Errorf("results sent back lack %q: %s", want, res)
				}
			}
			if strings.Count(res, "marmalade") != 1 {
				t.Errorf("the file was read more than once: %s", res)
			}
		})
	}
}

func TestRunLimitsAndUsage(t *testing.T) {
	ws := workspace(t)
	srv := providertest.New(providertest.Turn{Calls: []providertest.Call{{Name: "list_directory", Arguments: `{"path":"."}`}}})
	srv.RepeatLast()
	defer srv.Close()
	r := runModel(t, ws, []string{"OPENAI_API_KEY=k"}, "--provider", "openai", "--base-url", srv.URL+"/v1", "--model", "m", "--root", ws, "--max-iterations", "2", "loop")
	if r.code != 1 || !strings.Contains(r.stderr, "maximum iterations reached") || !strings.Contains(r.stderr, "stopped at the iteration limit after 2 request(s)") {
		t.Errorf("max iterations: exit %d stderr %q", r.code, r.stderr)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
	for _, c := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"--provider", "openai", "--model", "m", "x"}, "OPENAI_API_KEY"},
		{[]string{"ANTHROPIC_API_KEY="}, []string{"--provider", "anthropic", "--model", "m", "x"}, "ANTHROPIC_API_KEY"},
		{nil, []string{"--provider", "gpt", "--model", "m", "x"}, "unknown provider"},
		{nil, []string{"--provider", "openai", "x"}, "--model"},
		{[]string{"OPENAI_API_KEY=k"}, []string{"--provider", "openai", "--model", "m", "--api", "assistants", "x"}, "--api"},
	} {
		env := append([]string{"OPENAI_API_KEY="}, c.env...)
		r := runModel(t, ws, env, c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d stderr %q", c.args, r.code, r.stderr)
		}
	}
}

// TestRunWithoutAgentProgram checks that toolgate alone says how to get
// toolgate-agent for the SDK providers.
func TestRunWithoutAgentProgram(t *testing.T) {
	dir := t.TempDir()
	alone := filepath.Join(dir, "toolgate")
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(alone, "run", "--provider", "anthropic", "--model", "m", "x")
	cmd.Env = []string{"PATH=" + dir, "ANTHROPIC_API_KEY=k"}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "go install github.com/toolgate/toolgate/cmd/toolgate-agent@latest") {
		t.Fatalf("exit %v, output %q; want exit 2 saying how to install toolgate-agent", err, out)
	}
	// A lean toolgate under the agent program's name does not hand over to
	// itself for ever.
	if err := os.WriteFile(filepath.Join(dir, "toolgate-agent"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(alone, "run", "--provider", "openai", "--model", "m", "x")
	cmd.Env = []string{"PATH=" + dir, "OPENAI_API_KEY=k"}
	out, err = cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "not the toolgate-agent program") {
		t.Fatalf("exit %v, output %q; want exit 2 saying the program is not toolgate-agent", err, out)
	}
}
