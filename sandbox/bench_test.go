//go:build linux

package sandbox

import (
	"context"
	"testing"
)

// BenchmarkNative times one Run of `true`: with a helper started for it
// (cold), and back to back with helpers started ahead (Prestart: each
// still fresh and used once). The helper is this test binary. The
// through-serve figure beside bubblewrap is bench/sandbox's.
func BenchmarkNative(b *testing.B) {
	ws := b.TempDir()
	for _, bc := range []struct {
		name string
		n    *Native
	}{{"cold", &Native{}}, {"prestart", &Native{Prestart: true}}} {
		b.Run(bc.name, func(b *testing.B) {
			defer bc.n.Close()
			for b.Loop() {
				o, err := bc.n.Run(context.Background(), Spec{Argv: []string{"true"}, Root: ws})
				if err != nil || o.ExitCode != 0 {
					b.Fatalf("exit %d, %v: %s", o.ExitCode, err, o.Stderr)
				}
			}
		})
	}
}

// BenchmarkReduced times one Run of `true` under the reduced sandbox (no
// namespaces, a helper started for each: there is no pool), beside
// BenchmarkNative's cold Run.
func BenchmarkReduced(b *testing.B) {
	ws := b.TempDir()
	r := &Reduced{}
	defer r.Close()
	for b.Loop() {
		o, err := r.Run(context.Background(), Spec{Argv: []string{"true"}, Root: ws})
		if err != nil || o.ExitCode != 0 {
			b.Fatalf("exit %d, %v: %s", o.ExitCode, err, o.Stderr)
		}
	}
}
