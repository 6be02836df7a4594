package mcpclient

import (
	"fmt"
	"sort"

	"github.com/toolgate/toolgate/registry"
)

// Shaping: which upstream tools a gateway offers, under which names and
// with which descriptions (Config.Tools, Exclude, Rename, Describe and
// Levels). Every key and glob names a tool as the upstream does.

// toolName is the local name of an upstream tool: renamed, then prefixed.
func (c *Config) toolName(remote string) string {
	if to, ok := c.Rename[remote]; ok {
		remote = to
	}
	return c.name(remote)
}

// checkRename refuses new names the registry would not take as they are,
// and two tools renamed to one name.
func (c *Config) checkRename() error {
	from := make([]string, 0, len(c.Rename))
	for old := range c.Rename {
		from = append(from, old)
	}
	sort.Strings(from)
	seen := map[string]string{}
	for _, old := range from {
		to := c.Rename[old]
		full := to
		if !c.NoPrefix {
			full = c.Prefix + c.Separator + to
		}
		if !registry.ValidName(to) || !registry.ValidName(full) {
			return fmt.Errorf("mcpclient: upstream %s: rename %s: %q: a new name takes 1-128 letters, digits, '_', '-' or '.' (with the prefix)", c.Name, old, to)
		}
		if other, dup := seen[to]; dup {
			return fmt.Errorf("mcpclient: upstream %s: rename: %s and %s are both renamed to %s; give them different names", c.Name, other, old, to)
		}
		seen[to] = old
	}
	return nil
}
