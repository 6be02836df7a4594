package main

import (
	"github.com/toolgate/toolgate/tool"
)

// builtinTools returns the built-in tool sets, confined to roots (the
// current folder when none is given).
func builtinTools(roots []string) ([]tool.Tool, error) {
	return nil, nil
}
