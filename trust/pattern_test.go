package trust

import (
	"regexp"
	"testing"
)

// TestPatternsCompile compiles every pattern of the package, which its
// users compile only when first used.
func TestPatternsCompile(t *testing.T) {
	resultCues() // the tables made on first use register theirs then
	textRules()
	if len(patterns) < 50 {
		t.Fatalf("%d patterns registered; the scanner's and the result check's should all be", len(patterns))
	}
	for _, p := range patterns {
		if _, err := regexp.Compile(p.src); err != nil {
			t.Errorf("pattern %q: %v", p.src, err)
		}
	}
}
