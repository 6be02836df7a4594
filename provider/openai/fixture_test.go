package openai_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/toolgate/toolgate/provider/providertest"
	"github.com/toolgate/toolgate/tool"

	tgopenai "github.com/toolgate/toolgate/provider/openai"
)

func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var weatherDefs = []tool.Definition{
	{Name: "get_current_weather", Description: "Get the current weather in a given location",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"location":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["location"]}`)},
	{Name: "get_weather", Description: "Get the weather",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}`)},
}

// The examples of OpenAI's API reference, served verbatim, come back as
// the calls they hold.
func TestDocumentedExamples(t *testing.T) {
	cases := []struct {
		fixture, api   string
		stream         bool
		id, name, args string
	}{
		{"chat_tool_calls.json", "chat", false, "call_abc123", "get_current_weather", "{\n\"location\": \"Boston, MA\"\n}"},
		{"chat_stream_tool_calls.sse", "chat", true, "call_DdmO9pD3xa9XTPNJ32zg2hcA", "get_weather", `{"location":"Paris, France"}`},
		{"responses_function_call.json", "responses", false, "call_unLAR8MvFNptuiZK6K6HCy5k", "get_current_weather", `{"location":"Boston, MA","unit":"celsius"}`},
	}
	for _, c := range cases {
		t.Run(c.fixture, func(t *testing.T) {
			srv := providertest.New(providertest.Turn{Raw: fixture(t, c.fixture)})
			defer srv.Close()
			client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("k"), option.WithMaxRetries(0))
			o := tgopenai.Options{Model: "gpt-4o", Tools: weatherDefs, Stream: c.stream}
			var calls []tool.Call
			var err error
			if c.api == "chat" {
				m, _ := tgopenai.NewChat(client, o)
				calls, err = m.Next(context.Background(), nil)
			} else {
				m, _ := tgopenai.NewResponses(client, o)
				calls, err = m.Next(context.Background(), nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(calls) != 1 || calls[0].ID != c.id || calls[0].Name != c.name || string(calls[0].Args) != c.args {
				t.Fatalf("calls = %+v", calls)
			}
		})
	}
}

const personSchema = `{"type":"object","properties":{"name":{"type":"string","minLength":1},"age":{"type":"integer","minimum":0},"email":{"type":"string"}},"required":["name","age"],"additionalProperties":false}`

func TestStructured(t *testing.T) {
	f, err := tgopenai.NewFormat("person", json.RawMessage(personSchema))
	if err != nil {
		t.Fatal(err)
	}
	srv := providertest.New(
		providertest.Turn{Text: `{"name":"Ada","age":36,"email":null}`},
		providertest.Turn{Text: `{"name":"","age":-1,"email":null}`},
		providertest.Turn{Text: `{"name":"Ada","age":36,"email":null}`},
		providertest.Turn{Text: `not json`},
	)
	defer srv.Close()
	client := openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey("k"), option.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{Model: "gpt-4o", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("who?")}}

	v, err := tgopenai.ChatStructured(context.Background(), client, params, f)
	if err != nil || v["name"] != "Ada" || len(v) != 2 {
		t.Fatalf("valid reply: %v, %v (the null email must be dropped)", v, err)
	}
	rf := srv.Requests()[0].Body["response_format"].(map[string]any)
	js := rf["json_schema"].(map[string]any)
	if rf["type"] != "json_schema" || js["strict"] != true || js["name"] != "person" {
		t.Errorf("response_format = %v", rf)
	}
	if req := js["schema"].(map[string]any)["required"].([]any); len(req) != 3 {
		t.Errorf("strict schema requires %v, want all three", req)
	}

	_, err = tgopenai.ChatStructured(context.Background(), client, params, f)
	if err == nil || !strings.Contains(err.Error(), "/name") || !strings.Contains(err.Error(), "/age") {
		t.Errorf("invalid reply: err = %v, want both failing fields", err)
	}

	rp := responses.ResponseNewParams{Model: "gpt-4o", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("who?")}}
	if v, err := tgopenai.ResponsesStructured(context.Background(), client, rp, f); err != nil || v["age"] != json.Number("36") {
		t.Errorf("responses: %v, %v", v, err)
	}
	if tf := srv.Requests()[2].Body["text"].(map[string]any)["format"].(map[string]any); tf["type"] != "json_schema" || tf["strict"] != true {
		t.Errorf("text.format = %v", tf)
	}
	if _, err := tgopenai.ChatStructured(context.Background(), client, params, f); err == nil || !strings.Contains(err.Error(), "not one JSON object") {
		t.Errorf("non-JSON reply: %v", err)
	}
}
