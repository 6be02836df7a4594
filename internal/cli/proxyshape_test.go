package cli

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/mcpclient"
	"github.com/toolgate/toolgate/tool"
)

// The tools: entry of an upstream, as a list (include) or a shaping block,
// and the levels: beside it.
func TestProxyConfigShaping(t *testing.T) {
	for _, tc := range []struct {
		name, server string
		want         mcpclient.Config
		err          string
	}{
		{name: "list is include", server: "tools: [\"read_*\", list_directory]",
			want: mcpclient.Config{Tools: []string{"read_*", "list_directory"}}},
		{name: "block", server: "tools:\n      include: [\"*\"]\n      exclude: [\"write_*\"]\n      rename: {read_text_file: read}\n      describe: {read: \"Read a file.\"}\n      levels: {\"read_*\": 0}",
			want: mcpclient.Config{Tools: []string{"*"}, Exclude: []string{"write_*"}, Rename: map[string]string{"read_text_file": "read"},
				Describe: map[string]string{"read": "Read a file."}, Levels: map[string]tool.Level{"read_*": 0}}},
		{name: "levels in both places", server: "levels: {\"a*\": 1}\n    tools:\n      levels: {\"b*\": 3, \"a*\": 1}",
			want: mcpclient.Config{Levels: map[string]tool.Level{"a*": 1, "b*": 3}}},
		{name: "levels disagree", server: "levels: {\"a*\": 1}\n    tools:\n      levels: {\"a*\": 2}", err: "keep one"},
		{name: "bad level under tools", server: "tools:\n      levels: {\"a*\": 9}", err: "not a level"},
		{name: "unknown shaping key", server: "tools:\n      rename_all: {a: b}", err: "rename_all"},
		{name: "scalar", server: "tools: everything", err: "tools"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "gw.yaml")
			os.WriteFile(file, []byte("servers:\n  - name: fs\n    command: x\n    "+tc.server+"\n"), 0o644)
			cfgs, _, err := loadProxyConfig(file)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one naming %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c := cfgs[0]
			got := mcpclient.Config{Tools: c.Tools, Exclude: c.Exclude, Rename: c.Rename, Describe: c.Describe, Levels: c.Levels}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
