package main

import (
	"strings"
	"testing"
)

// A callgrind dump with --dump-instr=yes as valgrind 3.19 writes it:
// functions named at their first mention (by fn= or, for a callee, cfn=)
// and by number after; positions absolute, relative and repeated; a
// call's cost line at its call site.
const dump = `# callgrind format
version: 1
positions: instr line
events: Ir
summary: 5000

ob=(1) /bin/toolgate
fl=(1) proc.go
fn=(1) runtime.park_m
0x1000 10 3
+4 * 2
cfn=(2) github.com/toolgate/toolgate/engine.(*Engine).run'2 [/bin/toolgate]
calls=1 0x2000 0
+8 11 100
fn=(2)
0x2000 20 1
+60 21 1
+4 22 1
* * 1
-0x40 23 1
fn=(3) memeqbody
0x3010 1 1
`

func TestReadFootprint(t *testing.T) {
	fp, err := readFootprint(strings.NewReader(dump))
	if err != nil {
		t.Fatal(err)
	}
	if fp.instructions != 5000 {
		t.Errorf("instructions %d, want 5000", fp.instructions)
	}
	// The 64-byte lines run: 0x1000 (0x1000, 0x1004, and the call site
	// 0x100c), 0x2000 (0x2000, 0x203c, and 0x2040-0x40), 0x2040 (twice),
	// 0x3000 (0x3010).
	if fp.lines != 4 {
		t.Errorf("lines %d, want 4", fp.lines)
	}
	want := []packageLines{{"toolgate/engine", 2}, {"memeqbody", 1}, {"runtime", 1}}
	if len(fp.packages) != len(want) {
		t.Fatalf("packages %v, want %v", fp.packages, want)
	}
	for i, p := range want {
		if fp.packages[i] != p {
			t.Errorf("packages[%d] = %v, want %v", i, fp.packages[i], p)
		}
	}
}

func TestReadFootprintRefusesOther(t *testing.T) {
	if _, err := readFootprint(strings.NewReader("hello\n")); err == nil {
		t.Error("a text without a summary was read as a dump")
	}
	if _, err := readFootprint(strings.NewReader("summary: 1\nfn=(1) f\n+x 1 1\n")); err == nil {
		t.Error("a bad position was read")
	}
}

func TestPackageOf(t *testing.T) {
	for fn, want := range map[string]string{
		"runtime.park_m": "runtime",
		"github.com/modelcontextprotocol/go-sdk/internal/jsonrpc2.(*Connection).Call [/bin/x]": "go-sdk/internal/jsonrpc2",
		"crypto/internal/fips140/sha256.blockSHANI.abi0":                                       "crypto/internal/fips140/sha256",
		"github.com/toolgate/toolgate/policy.cycle":                                            "toolgate/policy",
		"memeqbody": "memeqbody",
	} {
		if got := packageOf(fn); got != want {
			t.Errorf("packageOf(%q) = %q, want %q", fn, got, want)
		}
	}
}
