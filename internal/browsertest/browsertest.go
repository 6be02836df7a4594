// Package browsertest drives headless Chromium (Debian's chromium, which
// scripts/test-deps.sh installs) for the console's browser tests, and saves
// screenshots: under the test's temp folder always (the path is printed
// when the test fails), and with TOOLGATE_SCREENSHOTS=DIR also as DIR/NAME.png,
// small enough to commit for docs/console.md.
package browsertest

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Width is the browser window's width: the screenshots' width.
const Width = 1000

// New starts a headless browser for t (its own profile, so its own
// cookies) and returns its context, ended with the test.
func New(t *testing.T) context.Context {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Fatal("no chromium on PATH: run scripts/test-deps.sh (it installs Debian's chromium)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.Headless,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(Width, 900))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // start it now: its start is not a page's wait
		t.Fatalf("starting %s: %v (run scripts/test-deps.sh)", path, err)
	}
	return ctx
}

// Within returns ctx bounded by a generous wait for the UI.
func Within(t *testing.T, ctx context.Context) context.Context {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// WaitURL waits until the page loaded is one whose URL contains s (the
// answer to a form, say).
func WaitURL(t *testing.T, ctx context.Context, s string) {
	t.Helper()
	WaitTrue(t, ctx, fmt.Sprintf(`location.href.includes(%q) && document.readyState === "complete"`, s))
}

// WaitTrue waits until the JavaScript expression is true in the page,
// looking again while a navigation replaces the page.
func WaitTrue(t *testing.T, ctx context.Context, expr string) {
	t.Helper()
	ui := Within(t, ctx)
	for ui.Err() == nil {
		if ok, err := chromedp.Run(ui, chromedp.Evaluate[bool](expr)); err == nil && ok {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the page never had %s", expr)
}

// Shot saves a screenshot of the whole page as NAME.png.
func Shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	ui := Within(t, ctx)
	var raw []byte
	var err error
	for ui.Err() == nil { // a page that is loading has no size yet
		if raw, err = chromedp.Run(ui, chromedp.FullScreenshot(100)); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Errorf("screenshot %s: %v", name, err)
		return
	}
	raw = squeeze(raw)
	dir := shotDir(t)
	file := filepath.Join(dir, name+".png")
	if err := os.WriteFile(file, raw, 0o644); err != nil {
		t.Errorf("screenshot %s: %v", name, err)
		return
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("screenshot of %s: %s", name, file)
		}
	})
	if docs := os.Getenv("TOOLGATE_SCREENSHOTS"); docs != "" {
		if err := os.MkdirAll(docs, 0o755); err == nil {
			os.WriteFile(filepath.Join(docs, name+".png"), raw, 0o644)
		}
	}
}

// shotDir is the test's screenshot folder in the temporary folder, kept
// after the test (t.TempDir would remove it with the test).
func shotDir(t *testing.T) string {
	dir := filepath.Join(os.TempDir(), "toolgate-console-shots", filepath.Base(t.Name()))
	os.MkdirAll(dir, 0o755)
	return dir
}

// MaxHeight is the tallest a screenshot gets: a longer page is cut.
const MaxHeight = 1400

// squeeze cuts a PNG to MaxHeight and re-encodes it with the best
// compression (Chromium's is fast, not small); on any error it keeps the
// original.
func squeeze(raw []byte) []byte {
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		return raw
	}
	if b := img.Bounds(); b.Dy() > MaxHeight {
		if sub, ok := img.(interface {
			SubImage(image.Rectangle) image.Image
		}); ok {
			img = sub.SubImage(image.Rect(b.Min.X, b.Min.Y, b.Max.X, b.Min.Y+MaxHeight))
		}
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&buf, img); err != nil {
		return raw
	}
	return buf.Bytes()
}
