package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// TestReadmeBinarySize builds the lean toolgate as make build does (go
// build -buildvcs=auto, no other flags) and fails when the README's figure
// for its size, the number before the marker <!-- size:toolgate --> (in MB,
// 10^6 bytes, as bench/size/run.sh prints it), is more than 20 % off.
func TestReadmeBinarySize(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`([0-9]+(?:\.[0-9]+)?) MB<!-- size:toolgate -->`).FindAllSubmatch(readme, -1)
	if len(m) != 1 {
		t.Fatalf("README.md has %d figures marked <!-- size:toolgate -->, want one (\"51 MB<!-- size:toolgate -->\")", len(m))
	}
	stated, _ := strconv.ParseFloat(string(m[0][1]), 64)
	out := filepath.Join(t.TempDir(), "toolgate")
	if log, err := exec.Command("go", "build", "-buildvcs=auto", "-o", out, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, log)
	}
	fi, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	built := float64(fi.Size()) / 1e6
	if off := (stated - built) / built; off > 0.2 || off < -0.2 {
		t.Errorf("README.md says the lean binary is %g MB; built, it is %.1f MB (%+.0f %%): run bench/size/run.sh and update the figure", stated, built, off*100)
	}
}
