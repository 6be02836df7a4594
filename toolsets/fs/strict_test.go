package fs

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/tool"
)

// TestStrictArguments: a file tool called directly (no engine in front)
// refuses a key its parameters do not name and anything after the
// arguments object, whether the fast decoder takes the arguments or
// encoding/json decides; what encoding/json accepts (a key in another
// case) still runs.
func TestStrictArguments(t *testing.T) {
	e := newEnv(t, Options{})
	e.fixture(t)
	for _, c := range []struct {
		tool, args string
	}{
		{"read_file", `{"path":"README.md"}`},
		{"read_file", `{"path":"README.md","offset":1,"limit":5}`},
		{"get_file_info", `{"path":"README.md"}`},
		{"list_directory", `{"path":"src"}`},
		{"search_files", `{"pattern":"Project"}`},
		{"write_file", `{"path":"new.txt","content":"x"}`},
		{"create_directory", `{"path":"made"}`},
	} {
		body := strings.TrimSuffix(c.args, "}")
		for _, v := range []struct {
			name, args string
			want       tool.ErrorType // "": runs
		}{
			{"as sent", c.args, ""},
			{"with spaces", " \n" + c.args + "\t ", ""},
			{"unknown key", body + `,"follow":true}`, tool.InvalidArguments},
			{"unknown key first", `{"x":1,` + body[1:] + `}`, tool.InvalidArguments},
			{"unknown escaped key", body + `,"\u0066ollow":true}`, tool.InvalidArguments},
			{"unknown null", body + `,"follow":null}`, tool.InvalidArguments},
			{"trailing text", c.args + ` x`, tool.InvalidArguments},
			{"two objects", c.args + ` {}`, tool.InvalidArguments},
			{"an array", `[` + c.args + `]`, tool.InvalidArguments},
		} {
			_, err := e.call(c.tool, v.args)
			switch {
			case v.want == "" && err != nil && err.Type == tool.InvalidArguments:
				t.Errorf("%s %s (%s): refused: %s", c.tool, v.name, v.args, err.Text())
			case v.want != "" && (err == nil || err.Type != v.want):
				t.Errorf("%s %s (%s): %v, want %s", c.tool, v.name, v.args, err, v.want)
			}
		}
	}
	// A key in another case, or escaped, is one encoding/json matches to
	// the field.
	for _, args := range []string{`{"PATH":"README.md"}`, `{"\u0070ath":"README.md"}`} {
		if _, err := e.call("read_file", args); err != nil {
			t.Errorf("read_file %s: %s", args, err.Text())
		}
	}
}

// TestParallel: Options.Parallel is called as a search starts and its done
// as it ends, once each; a tool that does not fan out does not call it.
func TestParallel(t *testing.T) {
	var started, ended int
	e := newEnv(t, Options{Parallel: func() func() {
		started++
		return func() { ended++ }
	}})
	e.fixture(t)
	if _, err := e.call("read_file", `{"path":"README.md"}`); err != nil || started != 0 {
		t.Fatalf("read_file: %v, Parallel called %d times", err, started)
	}
	if _, err := e.call("search_files", `{"pattern":"Project"}`); err != nil {
		t.Fatal(err.Text())
	}
	if _, err := e.call("search_files", `{"pattern":"("}`); err == nil {
		t.Fatal("a bad pattern was taken")
	}
	if started != 2 || ended != 2 {
		t.Fatalf("two searches: Parallel started %d, ended %d, want 2 and 2", started, ended)
	}
}
