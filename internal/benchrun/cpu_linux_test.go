package benchrun

import (
	"os"
	"testing"
)

// TestTreeCPU reads this process's tree, and finds no process -1.
func TestTreeCPU(t *testing.T) {
	if _, found, err := TreeCPU(os.Getpid()); err != nil || !found {
		t.Fatalf("TreeCPU(self) = found %v, %v", found, err)
	}
	if cpu, found, err := TreeCPU(-1); err != nil || found || cpu != 0 {
		t.Fatalf("TreeCPU(-1) = %v, found %v, %v", cpu, found, err)
	}
}
