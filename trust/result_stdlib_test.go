package trust

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolgate/toolgate/tool"
)

// corpus is a set of benign texts, each one tool result.
type corpus struct {
	name  string
	texts map[string]string // name → text
}

// treeTexts reads the text files under root whose names keep accepts, as
// a file tool returns them.
func treeTexts(t *testing.T, root string, skipDir func(name string) bool, keep func(name string) bool) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !keep(d.Name()) {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil || len(data) == 0 || len(data) > 4<<20 || bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data) {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		out[filepath.ToSlash(rel)] = string(data)
		return nil
	})
	if err != nil {
		t.Fatalf("reading %s: %v", root, err)
	}
	return out
}

func command(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return strings.TrimSpace(string(out))
}

func anyName(string) bool { return true }

func hasExt(exts ...string) func(string) bool {
	return func(name string) bool {
		for _, e := range exts {
			if strings.HasSuffix(name, e) {
				return true
			}
		}
		return false
	}
}

// stdlibCorpora are the Go, Python and Node texts on this machine.
func stdlibCorpora(t *testing.T) []corpus {
	goroot := command(t, "go", "env", "GOROOT")
	hidden := func(name string) bool { return strings.HasPrefix(name, ".") }
	goTexts := treeTexts(t, filepath.Join(goroot, "src"), hidden, anyName)
	for k, v := range treeTexts(t, filepath.Join(goroot, "doc"), hidden, anyName) {
		goTexts["doc/"+k] = v
	}
	py := command(t, "python3", "-c", "import sysconfig; print(sysconfig.get_paths()['stdlib'])")
	pyTexts := treeTexts(t, py, func(name string) bool {
		return hidden(name) || name == "site-packages" || name == "__pycache__"
	}, anyName)
	node := map[string]string{}
	for _, dir := range []string{"node22", "mcp"} {
		for k, v := range treeTexts(t, filepath.Join("..", ".cache", dir, "node_modules"), hidden, hasExt(".js", ".mjs", ".cjs", ".ts", ".md", ".json")) {
			node[dir+"/"+k] = v
		}
	}
	return []corpus{{"go", goTexts}, {"python", pyTexts}, {"node", node}}
}

// benchmarkTexts are BFCL's and LiveMCPBench's records, each one text.
func benchmarkTexts(t *testing.T) corpus {
	out := map[string]string{}
	bfcl := filepath.Join("..", "testdata", "bfcl-v4")
	filepath.WalkDir(bfcl, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 4<<20)
		for n := 1; sc.Scan(); n++ {
			rel, _ := filepath.Rel(bfcl, p)
			out["bfcl/"+filepath.ToSlash(rel)+":"+strconv.Itoa(n)] = sc.Text()
		}
		return sc.Err()
	})
	for _, name := range []string{"tools.json", "all_annotations.json"} {
		data, err := os.ReadFile(filepath.Join("..", "testdata", "livemcpbench", name))
		if err != nil {
			t.Fatal(err)
		}
		var recs []json.RawMessage
		if err := json.Unmarshal(data, &recs); err != nil {
			t.Fatal(err)
		}
		for i, r := range recs {
			out["livemcpbench/"+name+":"+strconv.Itoa(i)] = string(r)
		}
	}
	return corpus{"bfcl+livemcpbench", out}
}

// TestResultCheckFalsePositives reads as tool results (one file, one
// record, one result) what an agent's tools bring back every day: this
// repository's files, the Go standard library's sources and docs, Python's
// standard library, the JavaScript of the npm packages the tests install
// (scripts/test-deps.sh), and BFCL's and LiveMCPBench's records. Code and
// data are not prose: at most 0.5 % of each may be flagged. `go test
// ./trust -run TestResultCheckFalsePositives -v` prints the figures and
// every flagged file.
func TestResultCheckFalsePositives(t *testing.T) {
	all := append([]corpus{{"repository", benignFiles(t)}}, stdlibCorpora(t)...)
	all = append(all, benchmarkTexts(t))
	files, flaggedAll := 0, 0
	for _, c := range all {
		var flagged []string
		for name, text := range c.texts {
			if fs := CheckResult(tool.TextResult(text)); len(fs) > 0 {
				flagged = append(flagged, name+": "+fs[0].Kind+": "+fs[0].Evidence)
			}
		}
		sort.Strings(flagged)
		rate := float64(len(flagged)) / float64(len(c.texts))
		t.Logf("false positives, %s: %d of %d files = %.3f%%", c.name, len(flagged), len(c.texts), 100*rate)
		for _, f := range flagged {
			t.Logf("  flagged: %s", f)
		}
		if len(c.texts) < 100 {
			t.Errorf("%s: only %d files read", c.name, len(c.texts))
		}
		if rate > 0.005 {
			t.Errorf("%s: false-positive rate %.3f%%, want at most 0.5%%", c.name, 100*rate)
		}
		files += len(c.texts)
		flaggedAll += len(flagged)
	}
	t.Logf("false positives, all: %d of %d files = %.3f%%", flaggedAll, files, 100*float64(flaggedAll)/float64(files))
}
