package policy

import (
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
)

// Selection is the selection section of a policy file: how tool_search
// ranks the catalogue (package selection).
type Selection struct {
	// Learn is whether and how tool_search learns from use; on by default.
	Learn Learn `yaml:"learn,omitempty" json:"learn,omitempty"`
}

// Learn is selection.learn: false turns learning from use off; a mapping
// keeps it on and sets how fast records age.
type Learn struct {
	Off bool `yaml:"-" json:"-"`
	// HalfLife is how long a usage record takes to lose half its weight
	// (0: 30 days).
	HalfLife time.Duration `yaml:"half_life,omitempty" json:"half_life,omitempty"`
}

// UnmarshalYAML reads learn: true|false or learn: {half_life: 720h}.
func (l *Learn) UnmarshalYAML(node ast.Node) error {
	if b, ok := node.(*ast.BoolNode); ok {
		*l = Learn{Off: !b.Value}
		return nil
	}
	type plain Learn
	var p plain
	if err := yaml.NodeToValue(node, &p, yaml.Strict()); err != nil {
		return err
	}
	*l = Learn(p)
	return nil
}

func checkSelection(s Selection) (string, string) {
	if s.Learn.HalfLife < 0 {
		return "$.selection.learn.half_life", "selection.learn.half_life must not be negative"
	}
	return "", ""
}
