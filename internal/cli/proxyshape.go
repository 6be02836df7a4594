package cli

import (
	"fmt"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"

	"github.com/toolgate/toolgate/mcpclient"
	"github.com/toolgate/toolgate/tool"
)

// proxyTools is the tools: entry of one upstream in the gateway's
// configuration: a list of globs (the tools to keep) or the whole shaping
// block. Every key and glob names a tool as the upstream does.
type proxyTools struct {
	Include  []string          `yaml:"include"`
	Exclude  []string          `yaml:"exclude"`
	Rename   map[string]string `yaml:"rename"`
	Describe map[string]string `yaml:"describe"`
	Levels   map[string]int    `yaml:"levels"`
}

// UnmarshalYAML reads tools: [globs] (shorthand for include) or
// tools: {include, exclude, rename, describe, levels}.
func (t *proxyTools) UnmarshalYAML(node ast.Node) error {
	if _, ok := node.(*ast.SequenceNode); ok {
		return yaml.NodeToValue(node, &t.Include, yaml.Strict())
	}
	type plain proxyTools
	var p plain
	if err := yaml.NodeToValue(node, &p, yaml.Strict(), yaml.DisallowUnknownField()); err != nil {
		return err
	}
	*t = proxyTools(p)
	return nil
}

// shape puts the tools: entry and the server's levels: (the older place
// of levels, still read) into c.
func (t proxyTools) shape(c *mcpclient.Config, serverLevels map[string]int, where string) error {
	c.Tools, c.Exclude, c.Rename, c.Describe = t.Include, t.Exclude, t.Rename, t.Describe
	for _, m := range []map[string]int{serverLevels, t.Levels} {
		for g, l := range m {
			if !tool.Level(l).Valid() {
				return fmt.Errorf("%s: levels: %q: %d is not a level (0-3)", where, g, l)
			}
			if c.Levels == nil {
				c.Levels = map[string]tool.Level{}
			}
			if old, ok := c.Levels[g]; ok && old != tool.Level(l) {
				return fmt.Errorf("%s: levels: %q is given level %d under the server and %d under tools; keep one", where, g, old, l)
			}
			c.Levels[g] = tool.Level(l)
		}
	}
	return nil
}
