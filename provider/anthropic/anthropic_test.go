package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/toolgate/toolgate/agent"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/provider/providertest"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tool"

	tganthropic "github.com/toolgate/toolgate/provider/anthropic"
)

func client(srv *providertest.Server) anthropic.Client {
	return anthropic.NewClient(option.WithBaseURL(srv.URL+"/"), option.WithAPIKey("sk-ant-test-secret"), option.WithMaxRetries(0))
}

func run(t *testing.T, stream bool, srv *providertest.Server, o tganthropic.Options, ao agent.Options) (agent.Outcome, error, *providertest.Log, string) {
	t.Helper()
	tools, log := providertest.Tools()
	reg := registry.New()
	if err := reg.Register(tools...); err != nil {
		t.Fatal(err)
	}
	o.Model, o.Tools, o.Stream = "claude-test", reg.List(registry.Filter{}), stream
	m, err := tganthropic.NewMessages(client(srv), o)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	ao.Executor, ao.Text = engine.New(engine.Options{Registry: reg}), &text
	out, err := agent.Run(context.Background(), m, "add things", ao)
	return out, err, log, text.String()
}

type toolResult struct {
	text    string
	isError bool
}

// lastUser returns the tool_result blocks and texts of a request's last
// message, which must be the user's.
func lastUser(t *testing.T, req providertest.Request) (map[string]toolResult, []string, []string) {
	t.Helper()
	msgs := req.Body["messages"].([]any)
	last := msgs[len(msgs)-1].(map[string]any)
	if last["role"] != "user" {
		t.Fatalf("last message is the %v's", last["role"])
	}
	results := map[string]toolResult{}
	var texts, order []string
	for _, b := range last["content"].([]any) {
		bm := b.(map[string]any)
		order = append(order, bm["type"].(string))
		switch bm["type"] {
		case "tool_result":
			var s string
			for _, c := range bm["content"].([]any) {
				s += c.(map[string]any)["text"].(string)
			}
			results[bm["tool_use_id"].(string)] = toolResult{s, bm["is_error"] == true}
		case "text":
			texts = append(texts, bm["text"].(string))
		}
	}
	return results, texts, order
}

func TestLoop(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "sse"}[stream], func(t *testing.T) {
			srv := providertest.New(
				providertest.Turn{Text: "Adding.", Calls: []providertest.Call{
					{ID: "toolu_A", Name: "add", Arguments: `{"a": 2, "b": 3}`},
					{ID: "toolu_F", Name: "fail", Arguments: `{"id": "r1"}`},
				}},
				providertest.Turn{Text: "5, and r1 is missing."},
			)
			defer srv.Close()
			out, err, log, text := run(t, stream, srv, tganthropic.Options{System: "be brief"}, agent.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if out.Stop != agent.StopAnswered || out.Calls != 2 || out.Failed != 1 || text != "Adding.5, and r1 is missing." {
				t.Errorf("out %+v text %q", out, text)
			}
			if len(log.Runs()) != 2 {
				t.Errorf("runs %v", log.Runs())
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			first := reqs[0]
			if !strings.Contains(first.Header.Get("X-Api-Key")+first.Header.Get("Authorization"), "sk-ant-test-secret") || first.Header.Get("Anthropic-Version") == "" {
				t.Errorf("headers %v", first.Header)
			}
			if first.Body["max_tokens"] != 4096.0 || first.Body["model"] != "claude-test" || (first.Body["stream"] == true) != stream {
				t.Errorf("body %v", first.Body)
			}
			if sys := first.Body["system"].([]any)[0].(map[string]any); sys["text"] != "be brief" {
				t.Errorf("system %v", sys)
			}
			tools := first.Body["tools"].([]any)
			if len(tools) != 4 {
				t.Fatalf("%d tools", len(tools))
			}
			for _, x := range tools {
				tm := x.(map[string]any)
				is := tm["input_schema"].(map[string]any)
				if is["type"] != "object" || is["properties"] == nil || tm["name"] == nil || tm["description"] == nil {
					t.Errorf("tool %v", tm)
				}
				if tm["name"] == "add" && (len(is["required"].([]any)) != 2 || is["additionalProperties"] != false) {
					t.Errorf("add's input_schema %v", is)
				}
			}
			// The assistant's turn is echoed with its tool_use blocks.
			msgs := reqs[1].Body["messages"].([]any)
			asst := msgs[1].(map[string]any)
			blocks := asst["content"].([]any)
			if asst["role"] != "assistant" || len(blocks) != 3 || blocks[1].(map[string]any)["id"] != "toolu_A" ||
				string(mustJSON(blocks[1].(map[string]any)["input"])) != `{"a":2,"b":3}` {
				t.Errorf("assistant echoed as %v", asst)
			}
			res, _, order := lastUser(t, reqs[1])
			if res["toolu_A"] != (toolResult{"5", false}) {
				t.Errorf("add's tool_result %+v", res["toolu_A"])
			}
			if r := res["toolu_F"]; !r.isError || !strings.Contains(r.text, "not_found") || !strings.Contains(r.text, "list the records first") {
				t.Errorf("fail's tool_result %+v", r)
			}
			if strings.Join(order, ",") != "tool_result,tool_result" {
				t.Errorf("blocks %v", order)
			}
		})
	}
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }

// Streamed input that is not one JSON object reaches the engine as it was
// sent and comes back as invalid_arguments; the history keeps an object.
func TestMalformedStreamedInput(t *testing.T) {
	bad := map[string]string{
		"toolu_concat": `{"a":1,"b":2}{"a":3,"b":4}`,
		"toolu_array":  `[1,2]`,
		"toolu_cut":    `{"a": 1, "b"`,
	}
	var calls []providertest.Call
	for _, id := range []string{"toolu_concat", "toolu_array", "toolu_cut"} {
		calls = append(calls, providertest.Call{ID: id, Name: "add", Arguments: bad[id]})
	}
	srv := providertest.New(providertest.Turn{Calls: calls}, providertest.Turn{Text: "sorry"})
	defer srv.Close()
	out, err, log, _ := run(t, true, srv, tganthropic.Options{}, agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Runs()) != 0 || out.Failed != 3 {
		t.Errorf("runs %v, out %+v", log.Runs(), out)
	}
	res, _, _ := lastUser(t, srv.Requests()[1])
	for id := range bad {
		if r := res[id]; !r.isError || !strings.Contains(r.text, "invalid_arguments") {
			t.Errorf("%s: %+v", id, r)
		}
	}
	msgs := srv.Requests()[1].Body["messages"].([]any)
	for _, b := range msgs[1].(map[string]any)["content"].([]any) {
		if in := b.(map[string]any)["input"]; in != nil {
			if _, ok := in.(map[string]any); !ok {
				t.Errorf("tool_use echoed with input %v", in)
			}
		}
	}
}

func TestToolChoice(t *testing.T) {
	cases := []struct {
		o    tganthropic.Options
		want string
	}{
		{tganthropic.Options{}, `null`},
		{tganthropic.Options{DisableParallel: true}, `{"disable_parallel_tool_use":true,"type":"auto"}`},
		{tganthropic.Options{ToolChoice: "none"}, `{"type":"none"}`},
		{tganthropic.Options{ToolChoice: "any"}, `{"type":"any"}`},
		{tganthropic.Options{ToolChoice: "required", DisableParallel: true}, `{"disable_parallel_tool_use":true,"type":"any"}`},
		{tganthropic.Options{ForceTool: "finish"}, `{"name":"finish","type":"tool"}`},
	}
	for _, c := range cases {
		srv := providertest.New(providertest.Turn{Text: "hi"})
		_, err, _, _ := run(t, false, srv, c.o, agent.Options{})
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := string(mustJSON(srv.Requests()[0].Body["tool_choice"])); got != c.want {
			t.Errorf("%+v: tool_choice %s, want %s", c.o, got, c.want)
		}
	}
	if _, err := tganthropic.NewMessages(anthropic.NewClient(), tganthropic.Options{Model: "m", ToolChoice: "sometimes"}); err == nil {
		t.Error("an unknown tool choice is accepted")
	}
}

func TestStopAtAndMaxIterations(t *testing.T) {
	srv := providertest.New(providertest.Turn{Calls: []providertest.Call{{Name: "finish", Arguments: `{"answer":"x"}`}}})
	defer srv.Close()
	out, err, _, _ := run(t, true, srv, tganthropic.Options{}, agent.Options{StopAt: []string{"finish"}})
	if err != nil || out.Stop != agent.StopTool || len(srv.Requests()) != 1 {
		t.Errorf("stop at: out %+v err %v", out, err)
	}
	srv2 := providertest.New(providertest.Turn{Calls: []providertest.Call{{Name: "add", Arguments: `{"a":1,"b":1}`}}})
	srv2.RepeatLast()
	defer srv2.Close()
	out, err, _, _ = run(t, false, srv2, tganthropic.Options{}, agent.Options{MaxIterations: 2})
	if !errors.Is(err, agent.ErrMaxIterations) || out.Iterations != 2 || len(srv2.Requests()) != 2 {
		t.Errorf("max iterations: out %+v err %v", out, err)
	}
}

// A user message after results joins their message, after the
// tool_result blocks, as the API requires.
func TestResultsMixedWithText(t *testing.T) {
	srv := providertest.New(
		providertest.Turn{Calls: []providertest.Call{{ID: "toolu_1", Name: "add", Arguments: `{"a":1,"b":1}`}}},
		providertest.Turn{Text: "2"},
	)
	defer srv.Close()
	tools, _ := providertest.Tools()
	reg := registry.New()
	reg.Register(tools...)
	m, err := tganthropic.NewMessages(client(srv), tganthropic.Options{Model: "c", Tools: reg.List(registry.Filter{})})
	if err != nil {
		t.Fatal(err)
	}
	m.AddUser("add 1 and 1")
	calls, err := m.Next(context.Background(), nil)
	if err != nil || len(calls) != 1 {
		t.Fatal(calls, err)
	}
	m.AddResults(engine.New(engine.Options{Registry: reg}).ExecuteAll(context.Background(), calls))
	m.AddUser("and say it in words")
	if _, err := m.Next(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	res, texts, order := lastUser(t, srv.Requests()[1])
	if res["toolu_1"].text != "2" || len(texts) != 1 || strings.Join(order, ",") != "tool_result,text" {
		t.Errorf("results %v texts %v order %v", res, texts, order)
	}
}

func TestDocumentedExamples(t *testing.T) {
	for _, c := range []struct {
		file   string
		stream bool
		id     string
		args   string
	}{
		{"message_tool_use.json", false, "toolu_01A09q90qw90lq917835lq9", `{"location": "San Francisco, CA", "unit": "celsius"}`},
		{"stream_tool_use.sse", true, "toolu_01T1x1fJ34qAmk2tNTrN7Up6", `{"location": "San Francisco, CA", "unit": "fahrenheit"}`},
	} {
		b, err := os.ReadFile(filepath.Join("testdata", c.file))
		if err != nil {
			t.Fatal(err)
		}
		srv := providertest.New(providertest.Turn{Raw: string(b)})
		def := tool.Definition{Name: "get_weather", Description: "Get the weather",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"location":{"type":"string"},"unit":{"type":"string"}},"required":["location"]}`)}
		m, err := tganthropic.NewMessages(client(srv), tganthropic.Options{Model: "c", Tools: []tool.Definition{def}, Stream: c.stream})
		if err != nil {
			t.Fatal(err)
		}
		m.AddUser("weather?")
		var text strings.Builder
		calls, err := m.Next(context.Background(), func(s string) { text.WriteString(s) })
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(calls) != 1 || calls[0].ID != c.id || calls[0].Name != "get_weather" || string(calls[0].Args) != c.args || text.Len() == 0 {
			t.Errorf("%s: calls %+v text %q", c.file, calls, text.String())
		}
	}
}

const personSchema = `{"type":"object","properties":{"name":{"type":"string","minLength":1},"age":{"type":"integer","minimum":0}},"required":["name","age"],"additionalProperties":false}`

func TestStructured(t *testing.T) {
	f, err := tganthropic.NewFormat("person", json.RawMessage(personSchema))
	if err != nil {
		t.Fatal(err)
	}
	srv := providertest.New(providertest.Turn{Text: `{"name":"Ada","age":36}`}, providertest.Turn{Text: `{"name":"Ada","age":"old"}`})
	defer srv.Close()
	params := anthropic.MessageNewParams{Model: "c", Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("who?"))}}
	v, err := tganthropic.Structured(context.Background(), client(srv), params, f)
	if err != nil || v["name"] != "Ada" {
		t.Fatalf("%v %v", v, err)
	}
	oc := srv.Requests()[0].Body["output_config"].(map[string]any)["format"].(map[string]any)
	if oc["type"] != "json_schema" || oc["schema"].(map[string]any)["type"] != "object" {
		t.Errorf("output_config.format %v", oc)
	}
	if _, err := tganthropic.Structured(context.Background(), client(srv), params, f); err == nil || !strings.Contains(err.Error(), "/age") {
		t.Errorf("invalid reply: %v", err)
	}
}
