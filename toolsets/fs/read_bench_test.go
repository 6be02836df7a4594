package fs

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/internal/benchcpu"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tool"
	"github.com/toolgate/toolgate/trust"
)

// BenchmarkReadFile is one read_file call of bench/mcp's small file (20
// short lines) through the tool's Run, as the engine calls it: by a
// relative path, by an absolute one, and one folder down.
func BenchmarkReadFile(b *testing.B) {
	e := newEnv(b, Options{})
	var text strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&text, "line %d of a small file read by the MCP benchmark\n", i)
	}
	mustWrite(b, filepath.Join(e.ws, "small.txt"), text.String())
	mustWrite(b, filepath.Join(e.ws, "src", "pkg", "small.txt"), text.String())
	for _, bc := range []struct{ name, path string }{
		{"relative", "small.txt"},
		{"absolute", filepath.Join(e.ws, "small.txt")},
		{"nested", "src/pkg/small.txt"},
	} {
		args := fmt.Sprintf(`{"path":%q}`, bc.path)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if res, err := e.call("read_file", args); err != nil || !strings.Contains(res.Text(), "20|line 20 ") {
					b.Fatalf("%v %.100q", err, res.Text())
				}
			}
		})
	}
}

// BenchmarkReadFileChecked reads a 1 MB file with read_file through the
// engine, without and with the result check (trust.ResultCheck, as every
// command of the CLI runs it): a log (data: no cue can add up, so the check
// reads it once for its literals) and source and docs (this repository's
// engine and docs, prose full of imperatives). bench/resultcheck/run.sh
// prints the ratios.
func BenchmarkReadFileChecked(b *testing.B) {
	e := newEnv(b, Options{MaxOutputBytes: 2 << 20})
	var logText strings.Builder
	for i := 0; logText.Len() < 1<<20; i++ {
		fmt.Fprintf(&logText, "2026-12-01T10:%02d:%02dZ INFO request %d served in %dms path=/api/v1/items/%d status=200\n", i/60%60, i%60, i, i%97, i*7)
	}
	var docs strings.Builder
	for docs.Len() < 1<<20 {
		for _, glob := range []string{"../../docs/*.md", "../../engine/*.go"} {
			files, _ := filepath.Glob(glob)
			for _, f := range files {
				if filepath.Base(f) == "trust.md" { // its examples are injections
					continue
				}
				data, err := os.ReadFile(f)
				if err != nil {
					b.Fatal(err)
				}
				docs.Write(data)
			}
		}
	}
	mustWrite(b, filepath.Join(e.ws, "server.log"), logText.String()[:1<<20])
	mustWrite(b, filepath.Join(e.ws, "docs.txt"), docs.String()[:1<<20])
	reg := registry.New()
	if err := reg.Register(e.set.Tools()...); err != nil {
		b.Fatal(err)
	}
	for _, file := range []string{"server.log", "docs.txt"} {
		args := json.RawMessage(fmt.Sprintf(`{"path":%q}`, file))
		for _, check := range []string{"unchecked", "checked"} {
			o := engine.Options{Registry: reg}
			if check == "checked" {
				o.ResultChecker = &trust.ResultCheck{}
			}
			eng := engine.New(o)
			b.Run(strings.TrimSuffix(strings.TrimSuffix(file, ".log"), ".txt")+"/"+check, func(b *testing.B) {
				b.SetBytes(1 << 20)
				defer benchcpu.Report(b)()
				for b.Loop() {
					if res := eng.Execute(context.Background(), tool.Call{Name: "read_file", Args: args}); res.Error != nil || res.Meta["flagged"] != nil {
						b.Fatalf("%+v", res)
					}
				}
			})
		}
	}
}
