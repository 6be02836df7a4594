package cli

import (
	"reflect"
	"strings"
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

// TestCommandsOff: with the policy's sandbox.commands false no command
// tool is offered, even where the sandbox could run them, and withheld
// says why; the file tools still are.
func TestCommandsOff(t *testing.T) {
	c := &common{roots: []string{t.TempDir()}, auditPath: "off", noCommands: true, warm: true}
	sets, err := builtinTools(c)
	if err != nil {
		t.Fatal(err)
	}
	defer sets.Close()
	names := map[string]bool{}
	for _, tl := range sets.tools {
		names[tl.Definition().Name] = true
	}
	for _, n := range []string{"execute_command", "run_code", "start_process"} {
		if names[n] {
			t.Errorf("%s offered with sandbox.commands false", n)
		}
	}
	if !names["read_file"] || !names["write_file"] {
		t.Errorf("the file tools are missing: %v", names)
	}
	if !strings.Contains(sets.withheld, "execute_command") || !strings.Contains(sets.withheld, "sandbox.commands is false") {
		t.Errorf("withheld = %q", sets.withheld)
	}
}
