package fs

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// writeLines writes n numbered lines of about width bytes to path.
func writeLines(t testing.TB, path string, n, width int) int64 {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	pad := strings.Repeat("x", width)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(w, "line %d %s\n", i, pad)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	fi, _ := f.Stat()
	f.Close()
	return fi.Size()
}

func TestReadFile(t *testing.T) {
	e := newEnv(t, Options{})
	long := strings.Repeat("é", 2500)
	mustWrite(t, filepath.Join(e.ws, "t.txt"), "one\r\ntwo\n"+long+"\nbad \xff\xfe bytes\nlast")
	mustWrite(t, filepath.Join(e.ws, "bin.dat"), "abc\x00def")
	mustWrite(t, filepath.Join(e.ws, "empty.txt"), "")

	res, err := e.call("read_file", map[string]any{"path": "t.txt"})
	if err != nil {
		t.Fatal(err.Text())
	}
	lines := strings.Split(res.Text(), "\n")
	if len(lines) != 5 || lines[0] != "1|one" || lines[1] != "2|two" || lines[4] != "5|last" {
		t.Fatalf("unexpected lines: %q", lines)
	}
	if !strings.HasPrefix(lines[2], "3|"+strings.Repeat("é", MaxLineChars)+" … [line cut") {
		t.Fatalf("long line not cut with a marker: %.80q…", lines[2])
	}
	if lines[3] != "4|bad \uFFFD bytes" {
		t.Fatalf("invalid UTF-8 not replaced: %q", lines[3])
	}
	if res.Meta["total_lines"] != 5 || res.Meta["start_line"] != 1 || res.Meta["end_line"] != 5 || res.Meta["truncated"] != false {
		t.Fatalf("meta: %v", res.Meta)
	}

	res, err = e.call("read_file", map[string]any{"path": "t.txt", "offset": 2, "limit": 1})
	if err != nil || !strings.HasPrefix(res.Text(), "2|two\n") || !strings.Contains(res.Text(), "continue with offset=3") {
		t.Fatalf("range: %q %v", res.Text(), err)
	}
	if res.Meta["total_lines"] != 5 || res.Meta["end_line"] != 2 || res.Meta["truncated"] != true {
		t.Fatalf("meta: %v", res.Meta)
	}
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"path": "bin.dat"}, "get_file_info"},
		{map[string]any{"path": "t.txt", "offset": 9}, "offset between 1 and 5"},
		{map[string]any{"path": "t.txt", "limit": 2001}, "at most 2000"},
		{map[string]any{"path": "t.txt", "offset": 0}, "from 1"},
		{map[string]any{"path": "nope.txt"}, "list_directory"},
		{map[string]any{"path": "."}, "list_directory"},
	} {
		_, err := e.call("read_file", c.args)
		if err == nil || !strings.Contains(err.Text(), c.want) {
			t.Errorf("read_file %v: want an error mentioning %q, got %v", c.args, c.want, err)
		}
	}
	res, err = e.call("read_file", map[string]any{"path": "empty.txt"})
	if err != nil || res.Meta["total_lines"] != 0 {
		t.Fatalf("empty file: %v %v", res.Meta, err)
	}
}

// TestReadFileStreams reads a window near the end of a large file and
// checks that the bytes allocated stay far below the file's size.
func TestReadFileStreams(t *testing.T) {
	e := newEnv(t, Options{})
	size := writeLines(t, filepath.Join(e.ws, "big.txt"), 200000, 90) // ~20 MB
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res, err := e.call("read_file", map[string]any{"path": "big.txt", "offset": 199000, "limit": 100})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err.Text())
	}
	if !strings.HasPrefix(res.Text(), "199000|line 199000 ") || res.Meta["total_lines"] != 200000 || res.Meta["end_line"] != 199099 {
		t.Fatalf("wrong window: %.60q %v", res.Text(), res.Meta)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	if alloc > uint64(size)/10 {
		t.Fatalf("read_file allocated %d bytes for a %d-byte file: it does not stream", alloc, size)
	}
	t.Logf("file %d bytes, allocated %d bytes", size, alloc)
}

// BenchmarkReadFileNearEnd reads 500 lines near the end of a 100 MB file;
// B/op shows that the file is streamed, not loaded.
func BenchmarkReadFileNearEnd(b *testing.B) {
	e := newEnv(b, Options{})
	size := writeLines(b, filepath.Join(e.ws, "big.txt"), 1000000, 90)
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.call("read_file", map[string]any{"path": "big.txt", "offset": 999000, "limit": 500}); err != nil {
			b.Fatal(err.Text())
		}
	}
}
