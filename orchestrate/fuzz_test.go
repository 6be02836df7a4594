package orchestrate_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/orchestrate"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tool"
)

// FuzzPlan feeds arbitrary bytes to run_plan: whatever they are, the
// answer is a result (an error or a report), never a panic, and nothing
// runs unless the plan is valid.
func FuzzPlan(f *testing.F) {
	f.Add([]byte(bigPlan))
	f.Add([]byte(`{"steps":[{"id":"a","tool":"add","args":{"a":{"$ref":"a.structured.x"}},"when":{"not":{"any":[{"$ref":"b.status","in":[1,"x"]}]}}}]}`))
	f.Add([]byte(`{"steps":[{"id":"a","tool":"add","on_failure":{"tool":"add","args":{"a":{"$ref":"a.error/type"}}}}]}`))
	f.Add([]byte(`[]`))
	reg := registry.New()
	reg.Register(tool.New("add", "Adds.", func(_ context.Context, in sumIn) (sumOut, error) { return sumOut{in.A + in.B}, nil }))
	e := engine.New(engine.Options{Registry: reg})
	r := orchestrate.NewRunner(e, orchestrate.Limits{})
	reg.Register(orchestrate.RunPlanTool(r))
	f.Fuzz(func(t *testing.T, data []byte) {
		res := e.Execute(context.Background(), tool.Call{Name: "run_plan", Args: json.RawMessage(data)})
		if res.Error == nil && res.Structured == nil {
			t.Fatalf("a result without a report: %+v", res)
		}
	})
}
