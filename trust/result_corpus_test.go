package trust

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolgate/toolgate/tool"
)

// responseInjections reads testdata/tool-poisoning/response-injection.json.
func responseInjections(t *testing.T) []struct{ ID, Attack, Text string } {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "tool-poisoning", "response-injection.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out []struct{ ID, Attack, Text string }
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// attackFile reports a file that holds injection texts on purpose
// (corpora, the trust package and its docs, tests and test servers that
// carry attacks), or messages addressed to a chatbot (MetaTool's user
// requests, "Hey Chatbot, …": the shape of a fake user turn), which is not
// a benign output.
func attackFile(rel string) bool {
	rel = filepath.ToSlash(rel)
	for _, p := range []string{"testdata/tool-poisoning/", "testdata/attack-corpus-sample.json", "trust/", "docs/trust.md", "cmd/toolgate/testdata/injectserver/",
		"engine/check_test.go", "toolsets/web/check_test.go", "cmd/toolgate/results_test.go", "testdata/metatool/"} {
		if rel == p || strings.HasSuffix(p, "/") && strings.HasPrefix(rel, p) {
			return true
		}
	}
	// The CLI's tests of the scanner, the trust commands and red-team
	// attacks.
	name, ok := strings.CutPrefix(rel, "cmd/toolgate/")
	return ok && strings.HasSuffix(name, "_test.go") &&
		(strings.HasPrefix(name, "trust") || strings.HasPrefix(name, "scan") || strings.HasPrefix(name, "redteam"))
}

// benignFiles are the repository's text files (each read whole, as a
// file-reading tool returns it), except attackFile ones.
func benignFiles(t *testing.T) map[string]string {
	t.Helper()
	root, _ := filepath.Abs("..")
	out := map[string]string{}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if p != root && strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if attackFile(rel) || !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil || len(data) == 0 || len(data) > 4<<20 || bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data) {
			return nil
		}
		out[filepath.ToSlash(rel)] = string(data)
		return nil
	})
	return out
}

// TestResultCheckCorpus measures the result check: recall on every injected
// response text of testdata/tool-poisoning/response-injection.json, and
// false positives on every text file of the repository read as a tool's
// output (source, docs, JSON, YAML: full of "must", "ignore" and
// imperatives).
func TestResultCheckCorpus(t *testing.T) {
	caught, total := map[string]int{}, map[string]int{}
	var missed []string
	for _, r := range responseInjections(t) {
		total[r.Attack]++
		fs := CheckResult(tool.TextResult(r.Text))
		if len(fs) > 0 {
			caught[r.Attack]++
		} else {
			missed = append(missed, r.ID)
		}
	}
	attacks := make([]string, 0, len(total))
	n, c := 0, 0
	for a := range total {
		attacks = append(attacks, a)
		n += total[a]
		c += caught[a]
	}
	sort.Strings(attacks)
	for _, a := range attacks {
		t.Logf("recall %-28s %2d/%-2d", a, caught[a], total[a])
	}
	recall := float64(c) / float64(n)
	t.Logf("recall on response-injection.json: %d/%d = %.1f%%; missed %v", c, n, 100*recall, missed)

	files := benignFiles(t)
	var flagged []string
	for name, text := range files {
		if fs := CheckResult(tool.TextResult(text)); len(fs) > 0 {
			flagged = append(flagged, name+": "+fs[0].Kind+": "+fs[0].Evidence)
		}
	}
	sort.Strings(flagged)
	fpr := float64(len(flagged)) / float64(len(files))
	t.Logf("false positives on %d repository text files: %d = %.2f%%", len(files), len(flagged), 100*fpr)
	for _, f := range flagged {
		t.Logf("  flagged: %s", f)
	}
	// Tool outputs are mostly short: the same files cut in pieces of at
	// most 4 KiB (at line ends), each piece one output.
	pieces, flaggedPieces := 0, 0
	for name, text := range files {
		for _, p := range chunks(text, 4<<10) {
			pieces++
			if fs := CheckResult(tool.TextResult(p)); len(fs) > 0 {
				flaggedPieces++
				t.Logf("  flagged piece of %s: %s: %s", name, fs[0].Kind, fs[0].Evidence)
			}
		}
	}
	pieceFPR := float64(flaggedPieces) / float64(pieces)
	t.Logf("false positives on %d pieces of at most 4 KiB: %d = %.3f%%", pieces, flaggedPieces, 100*pieceFPR)
	if pieceFPR > 0.01 {
		t.Errorf("false-positive rate on pieces %.3f%%, want at most 1%%", 100*pieceFPR)
	}
	if recall < 0.95 {
		t.Errorf("recall %.1f%%, want at least 95%%", 100*recall)
	}
	if len(files) < 300 {
		t.Errorf("only %d benign files read; is the repository there?", len(files))
	}
	if fpr > 0.01 {
		t.Errorf("false-positive rate %.2f%%, want at most 1%%", 100*fpr)
	}
}

// chunks cuts s at line ends into pieces of at most n bytes (a longer line
// is a piece of its own).
func chunks(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		end := len(s)
		if end > n {
			end = n
			if i := strings.LastIndexByte(s[:n], '\n'); i > 0 {
				end = i + 1
			}
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}
