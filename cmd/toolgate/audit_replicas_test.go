package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// replicaCall runs `toolgate call` as replica id, its audit log given as
// the folder logs/ (one file per replica in it).
func replicaCall(t *testing.T, ws, logs, id string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"call", "--audit", logs + string(filepath.Separator)}, args...)...)
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "TOOLGATE_REPLICA="+id)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("replica %s: %v\n%s", id, err, out)
	}
}

// TestAuditPerReplica: replicas given one folder each keep a chain of
// their own in it (audit-REPLICA.jsonl); verify checks every chain and
// names the broken one, tail and query merge the logs by time.
func TestAuditPerReplica(t *testing.T) {
	ws := workspace(t)
	logs := filepath.Join(filepath.Dir(ws), "logs")
	for i := range 6 {
		os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%d.txt", i)), []byte("x\n"), 0o644)
	}
	for i := range 6 { // a, b, a, b, a, b: calls alternate between the replicas
		replicaCall(t, ws, logs, []string{"a", "b"}[i%2], "read_file", fmt.Sprintf(`{"path":"f%d.txt"}`, i))
	}
	replicaCall(t, ws, logs, "../evil/c", "read_file", `{"path":"f0.txt"}`)

	names, _ := filepath.Glob(filepath.Join(logs, "*"))
	for i := range names {
		names[i] = filepath.Base(names[i])
	}
	if want := []string{"audit-.._evil_c.jsonl", "audit-a.jsonl", "audit-b.jsonl"}; strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("the folder holds %q, want %q (one file per replica, the id reduced to a file name)", names, want)
	}

	r := toolgate(t, ws, "", "audit", "verify", logs)
	if r.code != 0 || strings.Count(r.stdout, "OK, 3 records") != 2 || strings.Count(r.stdout, "OK, 1 records") != 1 {
		t.Fatalf("verify of three intact chains: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// Without arguments, the logs of $TOOLGATE_AUDIT's folder.
	cmd := exec.Command(bin, "audit", "verify")
	cmd.Env = append(os.Environ(), "TOOLGATE_AUDIT="+logs+string(filepath.Separator))
	if out, err := cmd.CombinedOutput(); err != nil || strings.Count(string(out), ": OK,") != 3 {
		t.Errorf("verify with TOOLGATE_AUDIT a folder: %v\n%s", err, out)
	}

	// tail and query merge by time: the last calls, in the order made.
	paths := func(out string) []string {
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var rec struct {
				Arguments struct{ Path string }
			}
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("not a record: %q", line)
			}
			got = append(got, rec.Arguments.Path)
		}
		return got
	}
	a, b := filepath.Join(logs, "audit-a.jsonl"), filepath.Join(logs, "audit-b.jsonl")
	r = toolgate(t, ws, "", "audit", "tail", "-n", "4", a, b)
	if got := strings.Join(paths(r.stdout), " "); r.code != 0 || got != "f2.txt f3.txt f4.txt f5.txt" {
		t.Errorf("tail -n 4 over two logs = %q, want the last four calls in order\n%s", got, r.stderr)
	}
	r = toolgate(t, ws, "", "audit", "query", "--tool", "read_file", "--limit", "3", a, b)
	if got := strings.Join(paths(r.stdout), " "); r.code != 0 || got != "f3.txt f4.txt f5.txt" {
		t.Errorf("query --limit 3 over two logs = %q\n%s", got, r.stderr)
	}
	r = toolgate(t, ws, "", "audit", "query", logs)
	if got := strings.Join(paths(r.stdout), " "); r.code != 0 || got != "f0.txt f1.txt f2.txt f3.txt f4.txt f5.txt f0.txt" {
		t.Errorf("query over the folder = %q\n%s", got, r.stderr)
	}

	// An edit in b's chain is found and named; a's is still intact.
	data, _ := os.ReadFile(b)
	os.WriteFile(b, bytes.Replace(data, []byte(`"f3.txt"`), []byte(`"f9.txt"`), 1), 0o600)
	r = toolgate(t, ws, "", "audit", "verify", "--json", logs)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 1 || len(lines) != 3 {
		t.Fatalf("verify of a folder with one edited chain: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, line := range lines {
		var rep struct {
			File     string
			OK       bool
			Problems []struct{ Line int }
		}
		if err := json.Unmarshal([]byte(line), &rep); err != nil {
			t.Fatal(err)
		}
		wantOK := rep.File != b
		if rep.OK != wantOK || (!wantOK && rep.Problems[0].Line != 2) {
			t.Errorf("verify --json: %s", line)
		}
	}

	if r := toolgate(t, ws, "", "audit", "verify", filepath.Join(ws)); r.code != 1 || !strings.Contains(r.stderr, "no audit log") {
		t.Errorf("verify of a folder without logs: exit %d, %s", r.code, r.stderr)
	}
}
