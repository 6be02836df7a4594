package search

import (
	"os"
	"testing"
)

// TestNoDescriptorLeak runs searches (of the root, of a folder, of a file)
// and checks that every folder and file descriptor was closed.
func TestNoDescriptorLeak(t *testing.T) {
	_, root := fixture(t)
	count := func() int {
		fds, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(fds)
	}
	before := count()
	for range 20 {
		run(t, root, ".", Options{Pattern: "TODO", IncludeHidden: true, IncludeIgnored: true})
		run(t, root, "b", Options{Target: TargetFiles, Pattern: "*"})
		run(t, root, "a.go", Options{Pattern: "x"})
	}
	if after := count(); after != before {
		t.Errorf("%d descriptors open before, %d after", before, after)
	}
}
