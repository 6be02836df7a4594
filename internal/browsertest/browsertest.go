// Package browsertest drives headless Chromium (Debian's chromium, which
// scripts/test-deps.sh installs) for the console's browser tests, and saves
// screenshots: under the test's temporary folder always (kept, and their
// path printed, only when the test fails), and with
// TOOLGATE_SCREENSHOTS=DIR also as DIR/NAME.png, small enough to commit for
// docs/console.md. A test that passes leaves nothing behind: the browser's
// profile and its temporary files (its TMPDIR) are the test's too.
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
// cookies, and its own TMPDIR, where Chromium leaves the folder of its
// singleton socket when it is killed) and returns its context, ended with
// the test.
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
	// Short: the singleton socket's path must fit a socket address (108
	// bytes), which t.TempDir's, named by the test, may not.
	tmp, err := os.MkdirTemp("", "chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) }) // once the browser has ended
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.Headless,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.Env("TMPDIR="+tmp), chromedp.WindowSize(Width, 900))
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
	file := filepath.Join(t.TempDir(), name+".png")
	if err := os.WriteFile(file, raw, 0o644); err != nil {
		t.Errorf("screenshot %s: %v", name, err)
		return
	}
	t.Cleanup(func() { // before the temporary folder's removal
		if t.Failed() {
			t.Logf("screenshot of %s: %s", name, keep(t, file))
		}
	})
	if docs := os.Getenv("TOOLGATE_SCREENSHOTS"); docs != "" {
		if err := os.MkdirAll(docs, 0o755); err == nil {
			os.WriteFile(filepath.Join(docs, name+".png"), raw, 0o644)
		}
	}
}

// keep moves the screenshot file of a failed test out of its temporary
// folder, which the test's end removes, into a folder of its own that
// stays, and returns its path (file's when it cannot).
func keep(t *testing.T, file string) string {
	dir, err := os.MkdirTemp("", "toolgate-console-shots-"+filepath.Base(t.Name())+"-")
	if err != nil {
		return file
	}
	kept := filepath.Join(dir, filepath.Base(file))
	if os.Rename(file, kept) != nil {
		return file
	}
	return kept
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
