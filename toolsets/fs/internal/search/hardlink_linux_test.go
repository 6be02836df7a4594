package search

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestHardLinksSkipped: a file with other hard links is not read unless
// Options.HardLinks, whether it is reached through its folder, searched
// alone or through a symbolic link; a TargetFiles search still finds it.
func TestHardLinksSkipped(t *testing.T) {
	outside := tree(t, map[string]string{"secret.txt": "needle outside\n"})
	dir := tree(t, map[string]string{"a.txt": "needle a\n", "sub/b.txt": "no\n"})
	if err := os.Link(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "sub", "hl.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub/hl.txt", filepath.Join(dir, "via-link.txt")); err != nil {
		t.Fatal(err)
	}
	root := openRoot(t, dir)
	for _, tc := range []struct {
		dir   string
		links bool
		want  []string
		skip  int
	}{
		{"", false, []string{"a.txt:1"}, 2},
		{"sub/hl.txt", false, nil, 1},
		{"", true, []string{"a.txt:1", "sub/hl.txt:1", "via-link.txt:1"}, 0},
		{"sub/hl.txt", true, []string{"sub/hl.txt:1"}, 0},
	} {
		res := run(t, root, tc.dir, Options{Pattern: "needle", HardLinks: tc.links})
		if got := where(res.Matches); !slices.Equal(got, tc.want) || res.Skipped.HardLinked != tc.skip {
			t.Errorf("%q links=%v: %v, %d skipped; want %v, %d", tc.dir, tc.links, got, res.Skipped.HardLinked, tc.want, tc.skip)
		}
	}
	res := run(t, root, "", Options{Pattern: "**/*.txt", Target: TargetFiles})
	if len(res.Files) != 4 {
		t.Errorf("files: %+v", res.Files)
	}
}
