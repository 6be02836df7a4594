package gemini_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/agent"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/provider/gemini"
	"github.com/toolgate/toolgate/provider/providertest"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tool"
)

func client(srv *providertest.Server) *gemini.Client {
	return &gemini.Client{BaseURL: srv.URL + "/v1beta", APIKey: "gm-test-secret"}
}

func run(t *testing.T, stream bool, srv *providertest.Server, o gemini.Options, ao agent.Options) (agent.Outcome, error, *providertest.Log, string) {
	t.Helper()
	tools, log := providertest.Tools()
	reg := registry.New()
	if err := reg.Register(tools...); err != nil {
		t.Fatal(err)
	}
	o.Model, o.Tools, o.Stream = "gemini-test", reg.List(registry.Filter{}), stream
	m, err := gemini.NewChat(client(srv), o)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	ao.Executor, ao.Text = engine.New(engine.Options{Registry: reg}), &text
	out, err := agent.Run(context.Background(), m, "add things", ao)
	return out, err, log, text.String()
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestLoop(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "sse"}[stream], func(t *testing.T) {
			srv := providertest.New(
				providertest.Turn{Text: "Adding.", Calls: []providertest.Call{
					{ID: "fc-1", Name: "add", Arguments: `{"a": 2, "b": 3}`},
					{Name: "fail", Arguments: `{"id": "r1"}`},
					{Name: "add", Arguments: `[2, 3]`},
				}},
				providertest.Turn{Text: "5."},
			)
			defer srv.Close()
			out, err, log, text := run(t, stream, srv, gemini.Options{System: "be brief"}, agent.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if out.Stop != agent.StopAnswered || out.Calls != 3 || out.Failed != 2 || text != "Adding.5." || len(log.Runs()) != 2 {
				t.Errorf("out %+v text %q runs %v", out, text, log.Runs())
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			r0 := reqs[0]
			wantPath := "/v1beta/models/gemini-test:generateContent"
			if stream {
				wantPath = "/v1beta/models/gemini-test:streamGenerateContent"
				if r0.Query != "alt=sse" {
					t.Errorf("query %q", r0.Query)
				}
			}
			if r0.Path != wantPath || r0.Header.Get("X-Goog-Api-Key") != "gm-test-secret" || strings.Contains(r0.Query, "secret") {
				t.Errorf("path %s query %s key %q", r0.Path, r0.Query, r0.Header.Get("X-Goog-Api-Key"))
			}
			decls := r0.Body["tools"].([]any)[0].(map[string]any)["functionDeclarations"].([]any)
			if len(decls) != 4 {
				t.Fatalf("%d declarations", len(decls))
			}
			for _, d := range decls {
				dm := d.(map[string]any)
				p := dm["parameters"].(map[string]any)
				if p["type"] != "OBJECT" || dm["description"] == nil || p["additionalProperties"] != nil {
					t.Errorf("declaration %v", dm)
				}
			}
			if si := mustJSON(r0.Body["systemInstruction"]); si != `{"parts":[{"text":"be brief"}]}` {
				t.Errorf("systemInstruction %s", si)
			}
			contents := reqs[1].Body["contents"].([]any)
			if len(contents) != 3 {
				t.Fatalf("contents %v", contents)
			}
			model := contents[1].(map[string]any)
			if model["role"] != "model" || !strings.Contains(mustJSON(model), `"functionCall":{"args":{"a":2,"b":3},"id":"fc-1","name":"add"}`) ||
				!strings.Contains(mustJSON(model), `"functionCall":{"args":{},"name":"add"}`) {
				t.Errorf("model turn echoed as %s", mustJSON(model))
			}
			user := contents[2].(map[string]any)
			parts := user["parts"].([]any)
			if user["role"] != "user" || len(parts) != 3 {
				t.Fatalf("results turn %v", user)
			}
			fr := func(i int) map[string]any { return parts[i].(map[string]any)["functionResponse"].(map[string]any) }
			if got := mustJSON(fr(0)); got != `{"id":"fc-1","name":"add","response":{"output":"5"}}` {
				t.Errorf("first response %s", got)
			}
			if r := fr(1); r["name"] != "fail" || r["id"] != nil || !strings.Contains(mustJSON(r["response"]), "not_found") {
				t.Errorf("second response %v", r)
			}
			if r := fr(2); !strings.Contains(r["response"].(map[string]any)["error"].(string), "invalid_arguments") {
				t.Errorf("third response %v", r)
			}
		})
	}
}

func TestConfigAndErrors(t *testing.T) {
	for _, c := range []struct {
		o    gemini.Options
		want string
	}{
		{gemini.Options{}, `null`},
		{gemini.Options{ToolChoice: "none"}, `{"functionCallingConfig":{"mode":"NONE"}}`},
		{gemini.Options{ToolChoice: "required"}, `{"functionCallingConfig":{"mode":"ANY"}}`},
		{gemini.Options{ForceTool: "finish"}, `{"functionCallingConfig":{"allowedFunctionNames":["finish"],"mode":"ANY"}}`},
	} {
		srv := providertest.New(providertest.Turn{Text: "hi"})
		_, err, _, _ := run(t, false, srv, c.o, agent.Options{})
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := mustJSON(srv.Requests()[0].Body["toolConfig"]); got != c.want {
			t.Errorf("%+v: toolConfig %s, want %s", c.o, got, c.want)
		}
	}
	if _, err := gemini.NewChat(&gemini.Client{}, gemini.Options{Model: "m", DisableParallel: true}); err == nil {
		t.Error("DisableParallel is silently ignored")
	}
	srv := providertest.New(providertest.Turn{Status: 400, Text: "Invalid JSON payload received. Unknown name \"additionalProperties\""})
	defer srv.Close()
	_, err, _, _ := run(t, false, srv, gemini.Options{}, agent.Options{})
	if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "additionalProperties") {
		t.Errorf("API error: %v", err)
	}
}

func TestMaxIterationsAndCancel(t *testing.T) {
	srv := providertest.New(providertest.Turn{Calls: []providertest.Call{{Name: "add", Arguments: `{"a":1,"b":1}`}}})
	srv.RepeatLast()
	defer srv.Close()
	_, err, _, _ := run(t, true, srv, gemini.Options{}, agent.Options{MaxIterations: 2})
	if !errors.Is(err, agent.ErrMaxIterations) || len(srv.Requests()) != 2 {
		t.Errorf("err %v after %d requests", err, len(srv.Requests()))
	}

	hold := providertest.New(providertest.Turn{Hold: true})
	defer hold.Close()
	m, _ := gemini.NewChat(client(hold), gemini.Options{Model: "m"})
	ctx, cancel := context.WithCancel(context.Background())
	hold.OnRequest(cancel)
	if _, err := agent.Run(ctx, m, "x", agent.Options{Executor: engine.New(engine.Options{Registry: registry.New()})}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancel: %v", err)
	}
}

func TestDocumentedExample(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "function_call.json"))
	if err != nil {
		t.Fatal(err)
	}
	srv := providertest.New(providertest.Turn{Raw: string(b)})
	defer srv.Close()
	def := tool.Definition{Name: "set_light_values", Description: "Sets the brightness and color temperature of a light.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"brightness":{"type":"integer","minimum":0,"maximum":100},"color_temp":{"type":"string","enum":["daylight","cool","warm"]}},"required":["brightness","color_temp"]}`)}
	m, err := gemini.NewChat(client(srv), gemini.Options{Model: "gemini-2.5-flash", Tools: []tool.Definition{def}})
	if err != nil {
		t.Fatal(err)
	}
	m.AddUser("Dim the lights so the room feels cozy and warm.")
	calls, err := m.Next(context.Background(), nil)
	if err != nil || len(calls) != 1 || calls[0].Name != "set_light_values" || mustJSON(json.RawMessage(calls[0].Args)) != `{"brightness":25,"color_temp":"warm"}` {
		t.Fatalf("calls %+v err %v", calls, err)
	}
	p := srv.Requests()[0].Body["tools"].([]any)[0].(map[string]any)["functionDeclarations"].([]any)[0].(map[string]any)["parameters"]
	if got := mustJSON(p); !strings.Contains(got, `"brightness":{"maximum":100,"minimum":0,"type":"INTEGER"}`) || !strings.Contains(got, `"enum":["daylight","cool","warm"]`) {
		t.Errorf("parameters %s", got)
	}
}

func TestStructured(t *testing.T) {
	f, err := gemini.NewFormat("person", json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0}},"required":["name","age"]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := providertest.New(providertest.Turn{Text: `{"name":"Ada","age":36}`}, providertest.Turn{Text: `{"name":"Ada","age":-3}`})
	defer srv.Close()
	req := &gemini.Request{Contents: []gemini.Content{{Role: "user", Parts: []gemini.Part{{Text: "who?"}}}}}
	v, err := gemini.Structured(context.Background(), client(srv), "m", req, f)
	if err != nil || v["name"] != "Ada" {
		t.Fatalf("%v %v", v, err)
	}
	gc := srv.Requests()[0].Body["generationConfig"].(map[string]any)
	if gc["responseMimeType"] != "application/json" || gc["responseSchema"].(map[string]any)["type"] != "OBJECT" {
		t.Errorf("generationConfig %v", gc)
	}
	if _, err := gemini.Structured(context.Background(), client(srv), "m", req, f); err == nil || !strings.Contains(err.Error(), "/age") {
		t.Errorf("invalid reply: %v", err)
	}
}
