package mcpserver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/tool"
)

func TestWithinComparesComponents(t *testing.T) {
	for _, tc := range []struct {
		p, dir string
		want   bool
	}{
		{"/a/b", "/a", true}, {"/a", "/a", true}, {"/a/b/../c", "/a", true},
		{"/ab", "/a", false}, {"/a/../b", "/a", false}, {"/", "/a", false}, {"/a/..b", "/a", true},
	} {
		if got := within(tc.p, tc.dir); got != tc.want {
			t.Errorf("within(%q, %q) = %v, want %v", tc.p, tc.dir, got, tc.want)
		}
	}
}

func TestIntersect(t *testing.T) {
	got := intersect([]string{"/srv/a/sub", "/other", "/"}, []string{"/srv/a", "/srv/b"})
	want := []string{"/srv/a/sub", "/srv/a", "/srv/b"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("intersect = %v, want %v", got, want)
	}
	if got := intersect([]string{"/x"}, []string{"/srv"}); got != nil {
		t.Errorf("disjoint roots intersect to %v", got)
	}
}

// A symbolic link inside the allowed folder must not lead a call outside it.
func TestInsideFollowsLinks(t *testing.T) {
	base := t.TempDir()
	real, _ := filepath.EvalSymlinks(base)
	allowed := filepath.Join(real, "allowed")
	for _, d := range []string{allowed, filepath.Join(real, "secret")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(real, "secret"), filepath.Join(allowed, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(real, "nowhere"), filepath.Join(allowed, "dangling")); err != nil {
		t.Fatal(err)
	}
	ci := &callInfo{narrowed: true, allowed: []string{allowed}, base: real}
	for p, want := range map[string]bool{
		"allowed/x.txt":              true, // does not exist yet: a write may create it
		"allowed/new/dir/x.txt":      true,
		filepath.Join(allowed, "y"):  true,
		"allowed/escape/key":         false,
		"allowed/escape":             false,
		"allowed/dangling":           false,
		"allowed/new/../../secret/k": false,
		"allowed/escape/../new.txt":  false, // the link's parent, not allowed/
		"allowed/./y":                true,
		"secret/k":                   false,
		"":                           false,
		"allowed/\x00":               false,
	} {
		if got := ci.inside(p); got != want {
			t.Errorf("inside(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestPathArgs(t *testing.T) {
	paths := Opaque(DefaultPaths, "apply_patch")
	for _, tc := range []struct {
		tool, args string
		want       []string
		known      bool
	}{
		{"read_file", `{"path":"a.txt","limit":3}`, []string{"a.txt"}, true},
		{"move_file", `{"source":"a","destination":"b"}`, []string{"a", "b"}, true},
		{"echo", `{"text":"x"}`, nil, true},
		{"echo", ``, nil, true},
		{"apply_patch", `{"patch":"…"}`, nil, false},
		{"weird", `{"path":42}`, nil, false},
		{"weird", `[1]`, nil, false},
	} {
		got, known := paths(tool.Definition{Name: tc.tool}, json.RawMessage(tc.args))
		if !reflect.DeepEqual(got, tc.want) || known != tc.known {
			t.Errorf("%s %s: %v %v, want %v %v", tc.tool, tc.args, got, known, tc.want, tc.known)
		}
	}
}

func TestConversationNamesASessionOrNone(t *testing.T) {
	long := strings.Repeat("c", maxConversation)
	for _, tc := range []struct {
		meta map[string]any
		want string
	}{
		{map[string]any{ConversationMeta: "chat-42"}, "conversation:chat-42"},
		{map[string]any{ConversationMeta: "чат 7"}, "conversation:чат 7"},
		{map[string]any{ConversationMeta: long}, "conversation:" + long},
		{map[string]any{ConversationMeta: long + "c"}, ""},
		{map[string]any{ConversationMeta: ""}, ""},
		{map[string]any{ConversationMeta: 42}, ""},
		{map[string]any{ConversationMeta: []any{"a"}}, ""},
		{map[string]any{ConversationMeta: map[string]any{"id": "a"}}, ""},
		{map[string]any{ConversationMeta: "a\x00b"}, ""},
		{map[string]any{ConversationMeta: "a\nb"}, ""},
		{map[string]any{ConversationMeta: "a\u202eb"}, ""},
		{map[string]any{ConversationMeta: "\xff"}, ""},
		{map[string]any{"toolgate/Conversation": "a"}, ""},
		{map[string]any{"conversation": "a"}, ""},
		{nil, ""},
	} {
		if got := conversation(tc.meta); got != tc.want {
			t.Errorf("conversation(%q) = %q, want %q", tc.meta, got, tc.want)
		}
	}
}
