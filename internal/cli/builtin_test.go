package cli

import (
	"reflect"
	"testing"

	"github.com/toolgate/toolgate/tool"
)

// TestLazyToolsHeads: every built-in tool is built on first use
// (tool.Lazy), registered by its head, which must be its definition but
// for the schemas.
func TestLazyToolsHeads(t *testing.T) {
	c := &common{roots: []string{t.TempDir()}, auditPath: "off"}
	sets, err := builtinTools(c)
	if err != nil {
		t.Fatal(err)
	}
	defer sets.Close()
	lazy := 0
	for _, tl := range sets.tools {
		def := tl.Definition()
		if len(def.InputSchema) == 0 {
			t.Errorf("%s: no input schema", def.Name)
		}
		h, ok := tl.(tool.Headed)
		if !ok {
			t.Errorf("%s is built with the tool sets, not on first use", def.Name)
			continue
		}
		lazy++
		head := h.Head()
		def.InputSchema, def.OutputSchema = nil, nil
		head.InputSchema, head.OutputSchema = nil, nil
		if !reflect.DeepEqual(head, def) {
			t.Errorf("%s: head %+v, definition %+v", def.Name, head, def)
		}
	}
	if lazy < 10 {
		t.Errorf("%d built-in tools built on first use", lazy)
	}
}
