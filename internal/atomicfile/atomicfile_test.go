package atomicfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// only lists the names in dir, failing unless they are exactly want.
func only(t *testing.T, dir string, want ...string) {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, de := range des {
		got = append(got, de.Name())
	}
	if len(got) != len(want) {
		t.Fatalf("%s holds %q, want %q", dir, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s holds %q, want %q", dir, got, want)
		}
	}
}

func content(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || string(b) != want {
		t.Fatalf("%s holds %q (%v), want %q", path, b, err, want)
	}
}

// TestWrite: a new file and a replaced one get the content and exactly the
// mode asked, whatever the old file's mode and the umask, and nothing is
// left beside them.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	if err := Write(f, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	content(t, f, "one")
	if err := os.Chmod(f, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(f, []byte("two"), 0o640); err != nil {
		t.Fatal(err)
	}
	content(t, f, "two")
	fi, err := os.Stat(f)
	if err != nil {
		t.Fatal(err)
	}
	if want := fs.FileMode(0o640); runtime.GOOS != "windows" && fi.Mode().Perm() != want {
		t.Fatalf("mode %v, want %v", fi.Mode().Perm(), want)
	}
	only(t, dir, "f")
}

// TestWriteFuncError: an error of the writer is returned as it is, the
// old file untouched and the temporary file removed.
func TestWriteFuncError(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	os.WriteFile(f, []byte("old"), 0o600)
	boom := errors.New("boom")
	err := WriteFunc(f, 0o600, func(w io.Writer) error {
		w.Write([]byte("half"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	content(t, f, "old")
	only(t, dir, "f")
}

// TestWriteOverFolder: a folder in the file's place is an error and is
// left as it was, with no temporary file beside it.
func TestWriteOverFolder(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "f")
	os.Mkdir(f, 0o755)
	os.WriteFile(filepath.Join(f, "in"), []byte("x"), 0o600)
	if err := Write(f, []byte("new"), 0o600); err == nil {
		t.Fatal("a folder was replaced")
	}
	content(t, filepath.Join(f, "in"), "x")
	only(t, dir, "f")
}

// TestWriteNoFolder: a missing folder is an error, nothing is made.
func TestWriteNoFolder(t *testing.T) {
	dir := t.TempDir()
	if err := Write(filepath.Join(dir, "no", "f"), []byte("x"), 0o600); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want not exist", err)
	}
	only(t, dir)
}
