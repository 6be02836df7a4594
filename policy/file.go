package policy

import (
	"bytes"
	"fmt"
	"os"

	"github.com/goccy/go-yaml"

	"github.com/toolgate/toolgate/tool"
)

// File is the YAML shape of a policy file (toolgate.yaml).
type File struct {
	Mode     Mode     `yaml:"mode"`
	MaxLevel *int     `yaml:"max_level"`
	Deny     []string `yaml:"deny"`
	Ask      []string `yaml:"ask"`
	Allow    []string `yaml:"allow"`
}

// Parse reads a policy from YAML. Unknown fields are errors, and every error
// names the line and column.
func Parse(data []byte) (*Policy, error) {
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(data), yaml.Strict())
	if err := dec.Decode(&f); err != nil && err.Error() != "EOF" {
		return nil, fmt.Errorf("policy: %s", yaml.FormatError(err, false, true))
	}
	p := Default()
	if f.Mode != "" {
		p.Mode = f.Mode
	}
	if f.MaxLevel != nil {
		p.MaxLevel = tool.Level(*f.MaxLevel)
	}
	p.Deny, p.Ask, p.Allow = f.Deny, f.Ask, f.Allow
	if err := p.Check(); err != nil {
		return nil, err
	}
	return p, nil
}

// Load reads a policy file.
func Load(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	p, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}
