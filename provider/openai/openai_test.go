package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/toolgate/toolgate/agent"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/provider/providertest"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tool"

	tgopenai "github.com/toolgate/toolgate/provider/openai"
)

// setup returns an engine over providertest.Tools and an SDK client
// pointed at srv.
func setup(t *testing.T, srv *providertest.Server) (*engine.Engine, []tool.Definition, *providertest.Log, openai.Client) {
	t.Helper()
	tools, log := providertest.Tools()
	reg := registry.New()
	if err := reg.Register(tools...); err != nil {
		t.Fatal(err)
	}
	eng := engine.New(engine.Options{Registry: reg})
	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("sk-test-secret"), option.WithMaxRetries(0))
	return eng, reg.List(registry.Filter{}), log, client
}

// api is one of the two OpenAI APIs, streamed or not.
type api struct {
	name   string
	stream bool
	model  func(openai.Client, tgopenai.Options) (agent.Model, error)
}

var apis = []api{
	{"chat", false, func(c openai.Client, o tgopenai.Options) (agent.Model, error) { return tgopenai.NewChat(c, o) }},
	{"chat-stream", true, func(c openai.Client, o tgopenai.Options) (agent.Model, error) { return tgopenai.NewChat(c, o) }},
	{"responses", false, func(c openai.Client, o tgopenai.Options) (agent.Model, error) { return tgopenai.NewResponses(c, o) }},
	{"responses-stream", true, func(c openai.Client, o tgopenai.Options) (agent.Model, error) { return tgopenai.NewResponses(c, o) }},
}

func (a api) chat() bool { return strings.HasPrefix(a.name, "chat") }

func run(t *testing.T, a api, srv *providertest.Server, o tgopenai.Options, ao agent.Options) (agent.Outcome, error, *providertest.Log, string) {
	t.Helper()
	eng, defs, log, client := setup(t, srv)
	o.Model, o.Tools, o.Stream = "gpt-test", defs, a.stream
	m, err := a.model(client, o)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	ao.Executor, ao.Text = eng, &text
	out, err := agent.Run(context.Background(), m, "add things", ao)
	return out, err, log, text.String()
}

// results returns the tool results a request carried, by call ID.
func results(t *testing.T, a api, req providertest.Request) map[string]string {
	t.Helper()
	out := map[string]string{}
	if a.chat() {
		for _, m := range req.Body["messages"].([]any) {
			msg := m.(map[string]any)
			if msg["role"] == "tool" {
				out[msg["tool_call_id"].(string)] = contentText(msg["content"])
			}
		}
		return out
	}
	for _, it := range req.Body["input"].([]any) {
		item := it.(map[string]any)
		if item["type"] == "function_call_output" {
			out[item["call_id"].(string)] = item["output"].(string)
		}
	}
	return out
}

func contentText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	var s string
	for _, p := range v.([]any) {
		s += p.(map[string]any)["text"].(string)
	}
	return s
}

// echoedCalls returns the calls of the model the request replayed, by ID.
func echoedCalls(t *testing.T, a api, req providertest.Request) map[string]string {
	out := map[string]string{}
	if a.chat() {
		for _, m := range req.Body["messages"].([]any) {
			msg := m.(map[string]any)
			if msg["role"] == "assistant" {
				calls, _ := msg["tool_calls"].([]any)
				for _, c := range calls {
					cm := c.(map[string]any)
					fn := cm["function"].(map[string]any)
					out[cm["id"].(string)] = fn["name"].(string) + " " + fn["arguments"].(string)
				}
			}
		}
		return out
	}
	for _, it := range req.Body["input"].([]any) {
		item := it.(map[string]any)
		if item["type"] == "function_call" {
			out[item["call_id"].(string)] = item["name"].(string) + " " + item["arguments"].(string)
		}
	}
	return out
}

func TestParallelCallsAndAnswer(t *testing.T) {
	for _, a := range apis {
		t.Run(a.name, func(t *testing.T) {
			srv := providertest.New(
				providertest.Turn{Text: "Let me add.", Calls: []providertest.Call{
					{ID: "call_A", Name: "add", Arguments: `{"a": 2, "b": 3}`},
					{ID: "call_B", Name: "add", Arguments: `{"a": 40, "b": 2}`},
				}},
				providertest.Turn{Text: "The sums are 5 and 42."},
			)
			defer srv.Close()
			out, err, log, text := run(t, a, srv, tgopenai.Options{Strict: true}, agent.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if out.Stop != agent.StopAnswered || out.Iterations != 2 || out.Calls != 2 || out.Failed != 0 {
				t.Errorf("outcome = %+v", out)
			}
			if out.Answer != "The sums are 5 and 42." || text != "Let me add.The sums are 5 and 42." {
				t.Errorf("answer %q, streamed %q", out.Answer, text)
			}
			if n := len(log.Runs()); n != 2 {
				t.Errorf("tool ran %d times, want 2", n)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			for _, r := range reqs {
				if r.Header.Get("Authorization") != "Bearer sk-test-secret" {
					t.Errorf("authorization header %q", r.Header.Get("Authorization"))
				}
				if r.Body["model"] != "gpt-test" || (r.Body["stream"] == true) != a.stream {
					t.Errorf("model %v stream %v", r.Body["model"], r.Body["stream"])
				}
			}
			checkTools(t, a, reqs[0])
			got := results(t, a, reqs[1])
			if got["call_A"] != "5" || got["call_B"] != "42" || len(got) != 2 {
				t.Errorf("results sent back = %v", got)
			}
			echo := echoedCalls(t, a, reqs[1])
			if echo["call_A"] != `add {"a": 2, "b": 3}` || echo["call_B"] != `add {"a": 40, "b": 2}` {
				t.Errorf("calls echoed = %v", echo)
			}
		})
	}
}

// checkTools checks the tools parameter against the API's documented shape.
func checkTools(t *testing.T, a api, req providertest.Request) {
	t.Helper()
	tools, _ := req.Body["tools"].([]any)
	if len(tools) != 4 {
		t.Fatalf("%d tools sent, want 4", len(tools))
	}
	for _, x := range tools {
		tm := x.(map[string]any)
		if tm["type"] != "function" {
			t.Errorf("tool type %v", tm["type"])
		}
		fn := tm
		if a.chat() {
			fn = tm["function"].(map[string]any)
		}
		params, _ := fn["parameters"].(map[string]any)
		if fn["name"] == nil || fn["description"] == nil || params["type"] != "object" || fn["strict"] != true {
			t.Errorf("tool %v", tm)
		}
		if params["additionalProperties"] != false {
			t.Errorf("strict tool %v not closed", fn["name"])
		}
		if fn["name"] == "note" {
			req, _ := params["required"].([]any)
			tag := params["properties"].(map[string]any)["tag"].(map[string]any)
			if len(req) != 2 || !strings.Contains(string(mustJSON(tag["type"])), "null") {
				t.Errorf("strict note: required %v, tag %v", req, tag)
			}
		}
	}
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }

func TestMalformedArguments(t *testing.T) {
	bad := []struct{ name, args, want string }{
		{"empty", ``, `"a"`},
		{"concatenated", `{"a":1,"b":2}{"a":3,"b":4}`, "invalid_arguments"},
		{"array", `[1,2]`, "invalid_arguments"},
		{"string", `"a=1"`, "invalid_arguments"},
		{"cut", `{"a": 1, "b"`, "invalid_arguments"},
	}
	for _, a := range apis {
		t.Run(a.name, func(t *testing.T) {
			var calls []providertest.Call
			for _, b := range bad {
				calls = append(calls, providertest.Call{ID: "call_" + b.name, Name: "add", Arguments: b.args})
			}
			srv := providertest.New(providertest.Turn{Calls: calls}, providertest.Turn{Text: "sorry"})
			defer srv.Close()
			out, err, log, _ := run(t, a, srv, tgopenai.Options{}, agent.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(log.Runs()) != 0 {
				t.Errorf("the tool ran on malformed arguments: %v", log.Runs())
			}
			if out.Failed != len(bad) {
				t.Errorf("failed = %d, want %d", out.Failed, len(bad))
			}
			reqs := srv.Requests()
			got := results(t, a, reqs[1])
			for _, b := range bad {
				r := got["call_"+b.name]
				if !strings.Contains(r, "invalid_arguments") || !strings.Contains(r, b.want) {
					t.Errorf("%s: result %q, want invalid_arguments mentioning %s", b.name, r, b.want)
				}
			}
			// The replayed history stays readable by servers that parse it.
			for id, c := range echoedCalls(t, a, reqs[1]) {
				if _, args, _ := strings.Cut(c, " "); id != "call_empty" && id != "call_concatenated" && !json.Valid([]byte(args)) {
					t.Errorf("%s echoed as %q", id, args)
				}
			}
		})
	}
}

func TestFailingAndUnknownTool(t *testing.T) {
	for _, a := range apis {
		t.Run(a.name, func(t *testing.T) {
			srv := providertest.New(
				providertest.Turn{Calls: []providertest.Call{
					{ID: "call_f", Name: "fail", Arguments: `{"id":"r1"}`},
					{ID: "call_u", Name: "ad", Arguments: `{"a":1,"b":2}`},
					{ID: "call_ok", Name: "add", Arguments: `{"a":1,"b":2}`},
				}},
				providertest.Turn{Text: "done"},
			)
			defer srv.Close()
			out, err, _, _ := run(t, a, srv, tgopenai.Options{}, agent.Options{})
			if err != nil || out.Failed != 2 || out.Calls != 3 {
				t.Fatalf("out %+v err %v", out, err)
			}
			got := results(t, a, srv.Requests()[1])
			if r := got["call_f"]; !strings.Contains(r, "not_found") || !strings.Contains(r, "list the records first") {
				t.Errorf("failing tool's result %q", r)
			}
			if r := got["call_u"]; !strings.Contains(r, "unknown_tool") || !strings.Contains(r, "add") {
				t.Errorf("unknown tool's result %q", r)
			}
			if got["call_ok"] != "3" {
				t.Errorf("ok result %q", got["call_ok"])
			}
		})
	}
}

func TestStrictNullsRemoved(t *testing.T) {
	for _, a := range apis {
		t.Run(a.name, func(t *testing.T) {
			srv := providertest.New(
				providertest.Turn{Calls: []providertest.Call{{Name: "note", Arguments: `{"text":"hi","tag":null}`}}},
				providertest.Turn{Text: "ok"},
			)
			defer srv.Close()
			_, err, log, _ := run(t, a, srv, tgopenai.Options{Strict: true}, agent.Options{})
			if err != nil {
				t.Fatal(err)
			}
			runs := log.Runs()
			if len(runs) != 1 || string(runs[0].Args) != `{"text":"hi"}` {
				t.Errorf("the tool got %v, want the null tag removed", runs)
			}
		})
	}
}

func TestStopAtTool(t *testing.T) {
	for _, a := range apis {
		t.Run(a.name, func(t *testing.T) {
			srv := providertest.New(
				providertest.Turn{Calls: []providertest.Call{{Name: "add", Arguments: `{"a":1,"b":1}`}, {Name: "finish", Arguments: `{"answer":"2"}`}}},
			)
			srv.RepeatLast()
			defer srv.Close()
			out, err, log, _ := run(t, a, srv, tgopenai.Options{}, agent.Options{StopAt: []string{"finish"}})
			if err != nil {
				t.Fatal(err)
			}
			if out.Stop != agent.StopTool || out.StopTool != "finish" || out.Iterations != 1 || len(srv.Requests()) != 1 {
				t.Errorf("out %+v after %d requests", out, len(srv.Requests()))
			}
			if len(log.Runs()) != 2 {
				t.Errorf("runs %v: every call of the turn runs", log.Runs())
			}
		})
	}
}

func TestMaxIterations(t *testing.T) {
	for _, a := range apis {
		t.Run(a.name, func(t *testing.T) {
			srv := providertest.New(providertest.Turn{Calls: []providertest.Call{{Name: "add", Arguments: `{"a":1,"b":1}`}}})
			srv.RepeatLast()
			defer srv.Close()
			out, err, log, _ := run(t, a, srv, tgopenai.Options{}, agent.Options{MaxIterations: 3})
			if !errors.Is(err, agent.ErrMaxIterations) || !strings.Contains(err.Error(), "after 3 requests (last: add)") {
				t.Fatalf("err = %v", err)
			}
			if out.Stop != agent.StopMaxIterations || out.Iterations != 3 || len(srv.Requests()) != 3 || len(log.Runs()) != 3 {
				t.Errorf("out %+v, %d requests, %d runs", out, len(srv.Requests()), len(log.Runs()))
			}
		})
	}
}

func TestToolChoiceAndParallel(t *testing.T) {
	cases := []struct {
		o          tgopenai.Options
		chat, resp string
	}{
		{tgopenai.Options{}, `null`, `null`},
		{tgopenai.Options{ToolChoice: "none"}, `"none"`, `"none"`},
		{tgopenai.Options{ToolChoice: "required", DisableParallel: true}, `"required"`, `"required"`},
		{tgopenai.Options{ForceTool: "finish"}, `{"function":{"name":"finish"},"type":"function"}`, `{"name":"finish","type":"function"}`},
	}
	for _, a := range apis[:3:3] {
		for _, c := range cases {
			srv := providertest.New(providertest.Turn{Text: "hi"})
			_, err, _, _ := run(t, a, srv, c.o, agent.Options{})
			srv.Close()
			if err != nil {
				t.Fatal(err)
			}
			body := srv.Requests()[0].Body
			want := c.resp
			if a.chat() {
				want = c.chat
			}
			if got := string(mustJSON(body["tool_choice"])); got != want {
				t.Errorf("%s %+v: tool_choice %s, want %s", a.name, c.o, got, want)
			}
			if p, ok := body["parallel_tool_calls"]; ok != c.o.DisableParallel || (ok && p != false) {
				t.Errorf("%s %+v: parallel_tool_calls %v", a.name, c.o, p)
			}
		}
	}
	if _, err := tgopenai.NewChat(openai.NewClient(), tgopenai.Options{Model: "m", ForceTool: "nope"}); err == nil {
		t.Error("forcing a tool that is not in the set is accepted")
	}
}

func TestAPIError(t *testing.T) {
	for _, a := range apis {
		srv := providertest.New(providertest.Turn{Status: 400, Text: "Invalid schema for function 'add'"})
		_, err, _, _ := run(t, a, srv, tgopenai.Options{}, agent.Options{})
		srv.Close()
		if err == nil || !strings.Contains(err.Error(), "Invalid schema for function") || !strings.Contains(err.Error(), "400") {
			t.Errorf("%s: err = %v", a.name, err)
		}
	}
}

func TestCancel(t *testing.T) {
	for _, a := range apis {
		srv := providertest.New(providertest.Turn{Hold: true})
		eng, defs, _, client := setup(t, srv)
		m, err := a.model(client, tgopenai.Options{Model: "m", Tools: defs, Stream: a.stream})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		srv.OnRequest(cancel)
		_, err = agent.Run(ctx, m, "x", agent.Options{Executor: eng})
		srv.Close()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: err = %v, want context.Canceled", a.name, err)
		}
	}
}
