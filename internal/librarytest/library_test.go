package librarytest

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUpstreamModules builds, vets and runs a module that requires
// toolgate (replaced by this checkout) and, for each module that go.mod
// replaces by a folder, the upstream version go.mod requires; it imports
// every package of toolgate that is neither internal nor a command (go
// list: a new one is covered as it comes). Its go.sum is toolgate's, the
// replacing folders', and testdata/upstream.sum: the upstream modules' own
// sums (when go.mod moves to another version, add that version's two
// lines, as `go mod download -json MODULE@VERSION` prints them).
func TestUpstreamModules(t *testing.T) {
	if testing.Short() {
		t.Skip("builds toolgate's packages once more, against other modules")
	}
	root := strings.TrimSuffix(goCmd(t, ".", nil, "env", "GOMOD"), "/go.mod\n")
	var mod struct {
		Go      string
		Require []struct{ Path, Version string }
		Replace []struct{ Old, New struct{ Path string } }
	}
	if err := json.Unmarshal([]byte(goCmd(t, root, nil, "mod", "edit", "-json")), &mod); err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	gomod := "module toolgate.test/consumer\n\ngo " + mod.Go + "\n\nrequire github.com/toolgate/toolgate v0.0.0\n\nreplace github.com/toolgate/toolgate => " + root + "\n"
	upstream := 0
	for _, r := range mod.Replace {
		if !strings.HasPrefix(r.New.Path, "./") && !strings.HasPrefix(r.New.Path, "../") {
			continue
		}
		for _, q := range mod.Require {
			if q.Path == r.Old.Path {
				gomod += "\nrequire " + q.Path + " " + q.Version + "\n"
				upstream++
			}
		}
		if b, err := os.ReadFile(filepath.Join(root, r.New.Path, "go.sum")); err == nil {
			sum = append(sum, b...)
		}
	}
	if upstream == 0 {
		t.Fatal("go.mod replaces no required module by a folder")
	}
	b, err := os.ReadFile("testdata/upstream.sum")
	if err != nil {
		t.Fatal(err)
	}
	sum = append(sum, b...)

	imports := "package main\n\nimport (\n"
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(goCmd(t, root, nil, "list", "-f", "{{.Name}} {{.ImportPath}}", "./...")), "\n") {
		name, path, _ := strings.Cut(line, " ")
		if name == "main" || strings.HasSuffix(path, "/internal") || strings.Contains(path, "/internal/") {
			continue
		}
		imports += "\t_ \"" + path + "\"\n"
		n++
	}
	imports += ")\n"
	if n < 25 {
		t.Fatalf("go list found %d library packages", n)
	}
	main, err := os.ReadFile("testdata/main.go")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, b := range map[string][]byte{"go.mod": []byte(gomod), "go.sum": sum, "main.go": main, "imports.go": []byte(imports)} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// -mod=mod completes go.mod from the requirements' go.mod files; a
	// module whose sum go.sum lacks fails the build (the checksum database
	// is not asked: GONOSUMDB does not name it, and it is not reached).
	env := []string{"GOFLAGS=-mod=mod", "GOWORK=off"}
	goCmd(t, dir, env, "build", "-ldflags=-s -w", "-o", "consumer", ".") // no symbols: a shorter link
	goCmd(t, dir, env, "vet", ".")
	t.Logf("%d packages of toolgate built and vetted against %d upstream modules", n, upstream)

	cmd := exec.Command(filepath.Join(dir, "consumer"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil || out.String() != "ok\n" {
		t.Fatalf("the consumer: %v\n%s%s", err, out.String(), errb.String())
	}
}

// goCmd runs the go command in dir, with env added, and returns its output;
// it fails the test, with the command's output, when the command fails.
func goCmd(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("go %s in %s: %v\n%s%s", strings.Join(args, " "), dir, err, out.String(), errb.String())
	}
	return out.String()
}
