package patch

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseCodexExample(t *testing.T) {
	text := `*** Begin Patch
*** Add File: path/add.py
+abc
+def
*** Delete File: path/delete.py
*** Update File: path/update.py
*** Move to: path/update2.py
@@ def f():
-    pass
+    return 123
@@
 x = 1
-y = 2
+y = 3

*** Update File: file2.py
 import foo
+bar
*** End of File
*** End Patch
`
	p, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	want := []FileOp{
		{Kind: Add, Path: "path/add.py", Content: "abc\ndef\n", Line: 2},
		{Kind: Delete, Path: "path/delete.py", Line: 5},
		{Kind: Update, Path: "path/update.py", MoveTo: "path/update2.py", Line: 6, Hunks: []Hunk{
			{Context: "def f():", Old: []string{"    pass"}, New: []string{"    return 123"}, Ops: "-+", Line: 8},
			{Old: []string{"x = 1", "y = 2", ""}, New: []string{"x = 1", "y = 3", ""}, Ops: " -+ ", Line: 11},
		}},
		{Kind: Update, Path: "file2.py", Line: 16, Hunks: []Hunk{
			{Old: []string{"import foo"}, New: []string{"import foo", "bar"}, Ops: " +", EOF: true, Line: 17},
		}},
	}
	if !reflect.DeepEqual(p.Files, want) {
		t.Errorf("got  %+v\nwant %+v", p.Files, want)
	}
}

func TestParseLenient(t *testing.T) {
	for name, text := range map[string]string{
		"heredoc":          "<<'EOF'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF\n",
		"crlf":             "*** Begin Patch\r\n*** Delete File: a\r\n*** End Patch\r\n",
		"padded markers":   "\n\n  *** Begin Patch  \n  *** Delete File: a  \n*** End Patch   \n\n",
		"no trailing newl": "*** Begin Patch\n*** Delete File: a\n*** End Patch",
	} {
		p, err := Parse(text)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(p.Files) != 1 || p.Files[0].Path != "a" || p.Files[0].Kind != Delete {
			t.Errorf("%s: %+v", name, p.Files)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct {
		name, text string
		line       int
		problem    string
	}{
		{"empty", "  \n", 0, "empty"},
		{"no begin", "hello\n*** End Patch", 1, "starts with"},
		{"no end", "*** Begin Patch\n*** Delete File: a\n", 2, "ends with"},
		{"begin only", "*** Begin Patch", 1, "ends with"},
		{"nothing", "*** Begin Patch\n*** End Patch", 2, "no file"},
		{"bad header", "*** Begin Patch\n*** Delete File: a\n*** Frobnicate: b\n*** End Patch", 3, "not a file operation"},
		{"no path", "*** Begin Patch\n*** Add File: \n+x\n*** End Patch", 2, "path is missing"},
		{"add without plus", "*** Begin Patch\n*** Add File: a\n+x\ny\n*** End Patch", 4, "does not start with '+'"},
		{"update without hunk", "\n*** Begin Patch\n*** Update File: a\n*** End Patch", 3, "no hunk"},
		{"bad hunk line", "*** Begin Patch\n*** Update File: a\n@@\n x\n@@\n?y\n*** End Patch", 6, "does not start with"},
		{"second hunk without @@", "*** Begin Patch\n*** Update File: a\n@@\n-x\n+y\n@@ ctx\n-x\nz\n*** End Patch", 8, "does not start a hunk"},
		{"eof without lines", "*** Begin Patch\n*** Update File: a\n@@\n*** End of File\n*** End Patch", 4, "no line before"},
		{"empty move", "*** Begin Patch\n*** Update File: a\n*** Move to: \n@@\n-x\n*** End Patch", 3, "move to is missing"},
		{"hunk with no line", "*** Begin Patch\n*** Update File: a\n@@ ctx\n*** End Patch", 3, "no line"},
	} {
		_, err := Parse(c.text)
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%s: error %v, want a *ParseError", c.name, err)
			continue
		}
		if pe.Line != c.line || !strings.Contains(pe.Problem, c.problem) || pe.Expected == "" {
			t.Errorf("%s: line %d problem %q expected %q; want line %d and a problem with %q", c.name, pe.Line, pe.Problem, pe.Expected, c.line, c.problem)
		}
		if !strings.Contains(err.Error(), "expected") {
			t.Errorf("%s: %q does not say what was expected", c.name, err)
		}
	}
}

// update parses a patch of one Update File and applies it to original.
func update(t *testing.T, original, body string) (string, error) {
	t.Helper()
	p, err := Parse("*** Begin Patch\n*** Update File: f\n" + body + "\n*** End Patch")
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return ApplyHunks(original, p.Files[0].Hunks)
}

func TestApply(t *testing.T) {
	for _, c := range []struct {
		name, original, body, want string
	}{
		{"simple", "foo\nbar\n", "@@\n foo\n-bar\n+baz", "foo\nbaz\n"},
		{"two chunks", "foo\nbar\nbaz\nqux\n", "@@\n foo\n-bar\n+BAR\n@@\n baz\n-qux\n+QUX", "foo\nBAR\nbaz\nQUX\n"},
		{"interleaved and eof", "a\nb\nc\nd\ne\nf\n", "@@\n a\n-b\n+B\n@@\n c\n d\n-e\n+E\n@@\n f\n+g\n*** End of File", "a\nB\nc\nd\nE\nf\ng\n"},
		{"context narrows", "def a():\n    pass\ndef f():\n    pass\n", "@@ def f():\n-    pass\n+    return 123", "def a():\n    pass\ndef f():\n    return 123\n"},
		{"trailing whitespace", "foo   \nbar\t\n", "@@\n-foo\n-bar\n+x", "x\n"},
		{"surrounding whitespace", "    foo\n  bar\n", "@@\n foo\n-bar\n+  baz", "    foo\n  baz\n"},
		{"unicode punctuation", "say \u201chi\u201d \u2014 ok\nend\n", "@@\n-say \"hi\" - ok\n+say hello", "say hello\nend\n"},
		{"no final newline", "a\nb", "@@\n a\n-b\n+c", "a\nc\n"},
		{"eof picks the last", "x\nend\nx\nend\n", "@@\n-x\n-end\n+y\n*** End of File", "x\nend\ny\n"},
		{"pure addition after context", "func a() {\n}\nfunc b() {\n}\n", "@@ func b() {\n+\t// b", "func a() {\n}\nfunc b() {\n\t// b\n}\n"},
		{"pure addition at end", "a\n", "@@\n+b", "a\nb\n"},
		{"empty context line stands for final newline", "a\nb\n", "@@\n a\n-b\n+c\n", "a\nc\n"},
		{"crlf kept", "one\r\ntwo\r\nthree\r\n", "@@\n one\n-two\n+2\n three", "one\r\n2\r\nthree\r\n"},
		{"delete all", "a\nb\n", "@@\n-a\n-b", ""},
		{"first hunk without @@", "import foo\nx\n", " import foo\n+bar", "import foo\nbar\nx\n"},
		{"loose context keeps the file's text", "\tif x {  \n\t\ty()\n\t}\n", "@@\n if x {\n-\t\ty()\n+\t\tz()\n }", "\tif x {  \n\t\tz()\n\t}\n"},
	} {
		got, err := update(t, c.original, c.body)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

func TestApplyErrors(t *testing.T) {
	original := "package main\n\nfunc main() {\n\tprintln(1)\n}\n\nfunc other() {\n\tprintln(1)\n}\n"
	_, err := update(t, original, "@@ func main() {\n-\tprintln(2)\n+\tprintln(3)")
	var ae *ApplyError
	if !errors.As(err, &ae) {
		t.Fatalf("error %v, want *ApplyError", err)
	}
	if ae.Hunk != 1 || ae.Line != 3 || !reflect.DeepEqual(ae.Lines, []string{"\tprintln(2)"}) || ae.Context != "" {
		t.Errorf("not found: %+v", ae)
	}
	_, err = update(t, original, "@@\n func main() {\n-\tprintln(1)\n-}\n-// gone\n+x")
	if !errors.As(err, &ae) || !reflect.DeepEqual(ae.Near, []int{3}) || !strings.Contains(err.Error(), "line(s) 3") {
		t.Errorf("near: %v", err)
	}
	_, err = update(t, original, "@@ func missing() {\n-x\n+y")
	if !errors.As(err, &ae) || ae.Context != "func missing() {" || !strings.Contains(err.Error(), "context") {
		t.Errorf("context not found: %v", err)
	}
	_, err = update(t, original, "@@\n-\tprintln(1)\n+a\n@@\n func main() {\n-\tprintln(1)\n+b")
	if !errors.As(err, &ae) || ae.Hunk != 2 {
		t.Errorf("hunks out of order: the second must not be found before the first: %v", err)
	}
	_, err = update(t, "a\nb\nc\n", "@@\n a\n-b\n+B\n@@\n-b\n-c\n+x\n*** End of File")
	if !errors.As(err, &ae) || !strings.Contains(ae.Msg, "overlaps") {
		t.Errorf("overlap: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add("*** Begin Patch\n*** Update File: a\n@@ x\n y\n-z\n+w\n*** End of File\n*** End Patch", "x\ny\nz\n")
	f.Add("*** Begin Patch\n*** Add File: a\n+x\n*** Delete File: b\n*** End Patch\n", "")
	f.Add("<<EOF\n*** Begin Patch\n*** Update File: a\n*** Move to: b\n-x\n\n*** End Patch\nEOF", "x\r\n\r\n")
	f.Fuzz(func(t *testing.T, text, original string) {
		p, err := Parse(text)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error of type %T", err)
			}
			return
		}
		for _, op := range p.Files {
			if op.Kind == Update {
				if out, err := ApplyHunks(original, op.Hunks); err == nil && out != "" && !strings.HasSuffix(out, "\n") {
					t.Fatalf("result without final newline: %q", out)
				}
			}
		}
	})
}
