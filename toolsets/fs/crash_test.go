package fs

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/tool"
)

const crashEnv = "TOOLGATE_FS_CRASH_CHILD"

// crashVersions are the only contents a file of the crash test may have.
func crashVersions() map[string][2]string {
	big := func(c string) string { return strings.Repeat(c+strings.Repeat("x", 99)+"\n", 3000) } // 300 KB
	return map[string][2]string{
		"w1.txt":     {big("A"), big("B")},
		"sub/w2.txt": {big("C"), big("D")},
		"e.txt":      {strings.Repeat("aaaa\n", 2000), strings.Repeat("bbbb\n", 2000)},
	}
}

// crashChild writes and edits files in a loop until killed, printing a line
// after each completed call.
func crashChild(dir string) {
	roots, err := OpenRoots(dir)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	set, _ := New(roots, Options{})
	tools := map[string]tool.Tool{}
	for _, t := range set.Tools() {
		tools[t.Definition().Name] = t
	}
	run := func(name string, args any) {
		b, _ := json.Marshal(args)
		if _, err := tools[name].Run(context.Background(), tool.Call{Name: name, Args: b}); err != nil {
			fmt.Println("error:", err)
			os.Exit(2)
		}
		fmt.Println("ok")
	}
	v := crashVersions()
	for i := 1; ; i++ {
		run("write_file", map[string]any{"path": "w1.txt", "content": v["w1.txt"][i%2]})
		run("write_file", map[string]any{"path": "sub/w2.txt", "content": v["sub/w2.txt"][i%2]})
		from, to := "aaaa", "bbbb"
		if b, _ := os.ReadFile(filepath.Join(dir, "e.txt")); strings.HasPrefix(string(b), "bbbb") {
			from, to = to, from
		}
		run("edit_file", map[string]any{"path": "e.txt", "edits": []any{map[string]any{"old_string": from, "new_string": to, "replace_all": true}}})
	}
}

// TestCrashAtomicity kills a process that writes and edits files in a loop
// (SIGKILL at random moments, many times): every file is always one whole
// version, never torn, and no leftover temporary file shows through the tools.
func TestCrashAtomicity(t *testing.T) {
	if dir := os.Getenv(crashEnv); dir != "" {
		crashChild(dir)
		return
	}
	e := newEnv(t, Options{})
	v := crashVersions()
	for name, c := range v {
		mustWrite(t, filepath.Join(e.ws, name), c[0])
	}
	const kills = 25
	totalOps := 0
	for k := 0; k < kills; k++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashAtomicity$")
		cmd.Env = append(os.Environ(), crashEnv+"="+e.ws)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 1<<16)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		// Let it complete a few calls, then kill it a random moment later.
		for n := 0; n < 1+k%4; n++ {
			if l, ok := <-lines; !ok || l != "ok" {
				t.Fatalf("child: %q", l)
			}
			totalOps++
		}
		time.Sleep(time.Duration(rand.IntN(20000)) * time.Microsecond)
		cmd.Process.Signal(syscall.SIGKILL)
		for l := range lines {
			if l != "ok" {
				t.Fatalf("child: %q", l)
			}
			totalOps++
		}
		cmd.Wait()
		for name, c := range v {
			b, err := os.ReadFile(filepath.Join(e.ws, name))
			if err != nil {
				t.Fatalf("kill %d: %s: %v", k, name, err)
			}
			if s := string(b); s != c[0] && s != c[1] {
				t.Fatalf("kill %d: %s is torn (%d bytes, neither version)", k, name, len(b))
			}
		}
	}
	// Leftover temporary files may exist on disk, but the tools never show them.
	res, err := e.call("list_directory", map[string]any{"depth": 3, "include_hidden": true})
	if err != nil {
		t.Fatal(err.Text())
	}
	if strings.Contains(res.Text(), TempPrefix) {
		t.Fatalf("list_directory shows a temporary file:\n%s", res.Text())
	}
	left := 0
	filepath.WalkDir(e.ws, func(p string, d os.DirEntry, err error) error {
		if err == nil && isTemp(d.Name()) {
			left++
			if _, rerr := e.call("read_file", map[string]any{"path": p}); rerr == nil {
				t.Fatalf("read_file reads the temporary file %s", p)
			}
		}
		return nil
	})
	t.Logf("%d kills, %d completed calls, %d temporary files left on disk (hidden from the tools)", kills, totalOps, left)
}
