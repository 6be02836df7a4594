package mcpserver_test

import (
	"encoding/json"
	"math"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// patchedSDK is the go-sdk version third_party/go-sdk holds, patched (see
// its PATCHES.md).
const patchedSDK = "v1.8.0"

// TestSDKPatch fails when the patched copy of the go-sdk should be looked at
// again: go.mod requires another version (has upstream stopped building a
// JSON decoder per message, and encoding a result through an encoder of the
// whole message? if so, drop the patch; if not, patch the new version), or
// the replace is gone while decoding a message still allocates the
// decoder's 32 KiB buffer, or encoding a response still goes through an
// encoder (3 allocations where the patched SDK makes 1).
func TestSDKPatch(t *testing.T) {
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	var version, replace string
	for _, l := range strings.Split(string(mod), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(l), "replace "))
		switch {
		case len(f) >= 2 && f[0] == "github.com/modelcontextprotocol/go-sdk" && strings.HasPrefix(f[1], "v"):
			version = f[1]
		case len(f) == 3 && f[0] == "github.com/modelcontextprotocol/go-sdk" && f[1] == "=>":
			replace = f[2]
		}
	}
	if version != patchedSDK {
		t.Errorf("go.mod requires go-sdk %q, third_party/go-sdk is %s patched: check whether upstream's internal/json.Unmarshal still builds a decoder per call; if not, delete third_party/go-sdk and the replace in go.mod, else patch %s as its PATCHES.md says", version, patchedSDK, version)
	}
	if replace != "./third_party/go-sdk" {
		t.Errorf("go.mod replaces go-sdk by %q, want ./third_party/go-sdk", replace)
	}

	msg := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"small.txt"}}}`)
	const runs = 200
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		if _, err := jsonrpc.DecodeMessage(msg); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 8<<10 {
		t.Errorf("decoding a tools/call message allocates %d bytes, want at most 8 KiB (the patched SDK's JSON decoding)", per)
	}

	id, err := jsonrpc.MakeID(float64(7))
	if err != nil {
		t.Fatal(err)
	}
	resp := &jsonrpc.Response{ID: id, Result: json.RawMessage(`{"content":[{"type":"text","text":"1|line 1 of a small file\n"}]}`)}
	// The fewest allocations of several tries: the count is the process's,
	// and tests running in parallel only add to it.
	allocs := math.Inf(1)
	for range 10 {
		allocs = min(allocs, testing.AllocsPerRun(20, func() { jsonrpc.EncodeMessage(resp) }))
	}
	if allocs >= 3 {
		t.Errorf("encoding a response allocates %v times, want 1 (2 with -race; v1.8.0's encoder: 3)", allocs)
	}
}
