package browsertest

import (
	"os"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestLeavesNothing: a browser test that passes leaves nothing in the
// temporary folder: neither the browser's profile and singleton folder
// (org.chromium.Chromium.*, left in TMPDIR when chromedp kills it) nor its
// screenshots (toolgate-console-shots were kept after every run).
func TestLeavesNothing(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // os.TempDir, t.TempDir and the browser's
	t.Run("browse", func(t *testing.T) {
		ctx := New(t)
		if err := chromedp.Do(Within(t, ctx), chromedp.Navigate("data:text/html,<p>hello</p>")); err != nil {
			t.Fatal(err)
		}
		Shot(t, ctx, "hello")
	})
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("left in the temporary folder: %s", e.Name())
	}
}
