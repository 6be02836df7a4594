package mcpclient

import (
	"testing"

	"github.com/toolgate/toolgate/tool"
)

// TestLevelsHighestWins: the gateway's levels: map is the one glob map
// that does not follow the most-specific rule: every matching key counts
// and the highest level wins (a safety floor), whatever their order.
func TestLevelsHighestWins(t *testing.T) {
	for _, c := range []struct {
		levels map[string]tool.Level
		want   map[string]int // tool → level, -1 none
	}{
		{map[string]tool.Level{"read_*": 0, "list_*": 0, "write_file": 3}, // docs/proxy.example.yaml
			map[string]int{"read_file": 0, "list_directory": 0, "write_file": 3, "edit_file": -1}},
		{map[string]tool.Level{"*": 3, "read_file": 0, "read_*": 1},
			map[string]int{"read_file": 3, "read_x": 3, "x": 3}},
		{map[string]tool.Level{"*": 1, "write_file": 3, "write_*": 2},
			map[string]int{"write_file": 3, "write_x": 2, "read_file": 1}},
		{map[string]tool.Level{"read_*": 0, "*_file": 2},
			map[string]int{"read_file": 2, "read_dir": 0, "edit_file": 2, "list": -1}},
	} {
		cfg := Config{Levels: c.levels}
		for name, want := range c.want {
			got, ok := cfg.level(name)
			if want < 0 {
				if ok {
					t.Errorf("%v: %s got level %d, want none", c.levels, name, got)
				}
				continue
			}
			if !ok || int(got) != want {
				t.Errorf("%v: %s got level %d (%v), want %d", c.levels, name, got, ok, want)
			}
		}
	}
}
