package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/provider/internal/adapt"
	"github.com/toolgate/toolgate/schema"
	"github.com/toolgate/toolgate/tool"
)

// Tool choices (Options.ToolChoice), Gemini's function calling modes.
const (
	ChoiceAuto = "auto" // AUTO: the model decides (the default)
	ChoiceNone = "none" // NONE: no function calls
	ChoiceAny  = "any"  // ANY: at least one call ("required" is taken too)
)

// Options configure a conversation.
type Options struct {
	Model  string // required, e.g. "gemini-2.5-flash"
	System string // systemInstruction; "" for none
	Tools  []tool.Definition
	// ToolChoice is ChoiceAuto (or ""), ChoiceNone or ChoiceAny.
	ToolChoice string
	// ForceTool, when set, makes the model call this tool (mode ANY with
	// allowedFunctionNames); it overrides ToolChoice.
	ForceTool string
	// DisableParallel is refused: Gemini has no such switch.
	DisableParallel bool
	// Stream uses streamGenerateContent; text reaches the caller as it
	// is generated.
	Stream bool
	// MaxTokens is maxOutputTokens; 0: the API's default.
	MaxTokens int64
}

// Declarations returns defs as Gemini's tools parameter: one Tool holding
// a functionDeclaration per definition.
func Declarations(defs []tool.Definition) ([]Tool, error) {
	t, err := adapt.Compile(schema.Gemini, defs)
	if err != nil {
		return nil, fmt.Errorf("gemini: %w", err)
	}
	return declarations(t), nil
}

func declarations(t *adapt.Tools) []Tool {
	if len(t.List) == 0 {
		return nil
	}
	var fd []FunctionDeclaration
	for _, x := range t.List {
		fd = append(fd, FunctionDeclaration{Name: x.Wire, Description: x.Def.Description, Parameters: x.Compiled.Schema})
	}
	return []Tool{{FunctionDeclarations: fd}}
}

// Config returns toolConfig for a choice (ChoiceAuto, ChoiceNone,
// ChoiceAny) or, when force is set, the named function.
func Config(choice, force string) (*ToolConfig, error) {
	switch {
	case force != "":
		return &ToolConfig{&FunctionCallingConfig{Mode: "ANY", AllowedFunctionNames: []string{force}}}, nil
	case choice == "" || choice == ChoiceAuto:
		return nil, nil
	case choice == ChoiceNone:
		return &ToolConfig{&FunctionCallingConfig{Mode: "NONE"}}, nil
	case choice == ChoiceAny || choice == "required":
		return &ToolConfig{&FunctionCallingConfig{Mode: "ANY"}}, nil
	}
	return nil, fmt.Errorf("gemini: unknown tool choice %q (want auto, none or any, or set ForceTool)", choice)
}

// ResultPart renders a result as a functionResponse part: {"output": text}
// for a success, {"error": text} (the tool.Error's model-facing text) for
// a failure; plus the structured value as "structured" when there is one.
func ResultPart(id, name string, r tool.Result) Part {
	resp := map[string]any{}
	if r.IsError() {
		resp["error"] = adapt.Text(r)
	} else {
		resp["output"] = adapt.Text(r)
		if r.Structured != nil {
			resp["structured"] = r.Structured
		}
	}
	return Part{FunctionResponse: &FunctionResponse{ID: id, Name: name, Response: resp}}
}

// Chat is a conversation over generateContent. It implements agent.Model.
// It is not safe for concurrent use.
type Chat struct {
	client   *Client
	opts     Options
	tools    *adapt.Tools
	decls    []Tool
	config   *ToolConfig
	contents []Content
	pending  []pendingCall
	turn     int
}

type pendingCall struct {
	call tool.Call
	wire string // the name the model used
	id   string // the model's id, "" when it sent none
}

// NewChat starts a conversation with the model o.Model through client.
func NewChat(client *Client, o Options) (*Chat, error) {
	if o.Model == "" {
		return nil, errors.New("gemini: Options.Model is required")
	}
	if o.DisableParallel {
		return nil, errors.New("gemini: the API has no switch for parallel function calls (leave DisableParallel unset)")
	}
	t, err := adapt.Compile(schema.Gemini, o.Tools)
	if err != nil {
		return nil, fmt.Errorf("gemini: %w", err)
	}
	force := ""
	if o.ForceTool != "" {
		found := false
		for _, x := range t.List {
			found = found || x.Def.Name == o.ForceTool
		}
		if !found {
			return nil, fmt.Errorf("gemini: ForceTool %q is not one of the tools", o.ForceTool)
		}
		force = t.Wire(o.ForceTool)
	}
	cfg, err := Config(o.ToolChoice, force)
	if err != nil {
		return nil, err
	}
	return &Chat{client: client, opts: o, tools: t, decls: declarations(t), config: cfg}, nil
}

// Contents returns the conversation so far, in the API's shape.
func (c *Chat) Contents() []Content { return c.contents }

// AddUser appends a user turn; right after results, the text joins their
// turn as a part after the functionResponse parts.
func (c *Chat) AddUser(text string) {
	if n := len(c.contents); n > 0 && c.contents[n-1].Role == "user" {
		c.contents[n-1].Parts = append(c.contents[n-1].Parts, Part{Text: text})
		return
	}
	c.contents = append(c.contents, Content{Role: "user", Parts: []Part{{Text: text}}})
}

// Request returns the request Next sends for the conversation so far.
func (c *Chat) Request() *Request {
	r := &Request{Contents: c.contents, Tools: c.decls}
	if len(c.decls) > 0 {
		r.ToolConfig = c.config
	}
	if c.opts.System != "" {
		r.SystemInstruction = &Content{Parts: []Part{{Text: c.opts.System}}}
	}
	if c.opts.MaxTokens > 0 {
		r.GenerationConfig = &GenerationConfig{MaxOutputTokens: c.opts.MaxTokens}
	}
	return r
}

// Next asks the model and returns the calls of its reply (see agent.Model).
func (c *Chat) Next(ctx context.Context, text func(string)) ([]tool.Call, error) {
	if len(c.pending) > 0 {
		return nil, errors.New("gemini: the results of the last reply's calls were not added")
	}
	var parts []Part
	var blocked string
	take := func(r *Response) error {
		if r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "" {
			blocked = r.PromptFeedback.BlockReason
		}
		if len(r.Candidates) == 0 {
			return nil
		}
		for _, p := range r.Candidates[0].Content.Parts {
			if p.Text != "" && !p.Thought && text != nil {
				text(p.Text)
			}
			parts = append(parts, p)
		}
		return nil
	}
	if c.opts.Stream {
		if err := c.client.StreamGenerateContent(ctx, c.opts.Model, c.Request(), take); err != nil {
			return nil, err
		}
	} else {
		resp, err := c.client.GenerateContent(ctx, c.opts.Model, c.Request())
		if err != nil {
			return nil, err
		}
		take(resp)
	}
	if blocked != "" && len(parts) == 0 {
		return nil, fmt.Errorf("gemini: the prompt was blocked (%s)", blocked)
	}
	c.turn++
	var calls []tool.Call
	for i, p := range parts {
		if p.FunctionCall == nil {
			continue
		}
		fc := p.FunctionCall
		id := fc.ID
		if id == "" {
			id = fmt.Sprintf("gemini_%d_%d", c.turn, i)
		}
		call := c.tools.Call(id, fc.Name, fc.Args)
		calls = append(calls, call)
		c.pending = append(c.pending, pendingCall{call: call, wire: fc.Name, id: fc.ID})
		if !isObject(fc.Args) {
			// The API reads back only an object; the call ran on what the
			// model sent.
			cp := *fc
			cp.Args = json.RawMessage(`{}`)
			parts[i].FunctionCall = &cp
		}
	}
	if len(parts) > 0 {
		c.contents = append(c.contents, Content{Role: "model", Parts: mergeText(parts)})
	}
	return calls, nil
}

// mergeText joins consecutive plain text parts (a stream's pieces) into one.
func mergeText(parts []Part) []Part {
	var out []Part
	for _, p := range parts {
		plain := p.Text != "" && !p.Thought && p.ThoughtSignature == "" && p.FunctionCall == nil
		if n := len(out); plain && n > 0 {
			last := &out[n-1]
			if last.Text != "" && !last.Thought && last.ThoughtSignature == "" && last.FunctionCall == nil {
				last.Text += p.Text
				continue
			}
		}
		out = append(out, p)
	}
	return out
}

func isObject(b []byte) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(b, &m) == nil && m != nil
}

// AddResults appends a user turn of functionResponse parts for the last
// reply's calls, in order.
func (c *Chat) AddResults(results []tool.Result) {
	if len(c.pending) == 0 {
		return
	}
	var parts []Part
	for i, p := range c.pending {
		res := tool.ErrorResult(tool.Errorf(tool.Internal, "this call was not executed").
			WithSuggestion("call the tool again if you still need its result"))
		if i < len(results) {
			res = results[i]
		}
		parts = append(parts, ResultPart(p.id, p.wire, res))
	}
	c.contents = append(c.contents, Content{Role: "user", Parts: parts})
	c.pending = nil
}

// Format is a JSON Schema a reply must match, sent as generationConfig's
// responseSchema (Gemini's OpenAPI subset) with responseMimeType
// application/json.
type Format struct {
	adapt.Format // Name, and the schema compiled and as written
}

// NewFormat compiles sch (a JSON Schema of an object) for a structured
// reply named name.
func NewFormat(name string, sch json.RawMessage) (*Format, error) {
	f, err := adapt.NewFormat(schema.Gemini, name, sch)
	if err != nil {
		return nil, fmt.Errorf("gemini: %w", err)
	}
	return &Format{f}, nil
}

// Parse checks a reply's text against the format; the error lists every
// failing field.
func (f *Format) Parse(text string) (map[string]any, error) {
	v, err := adapt.Structured(f.Name, f.Compiled, f.Check, text)
	if err != nil {
		return nil, fmt.Errorf("gemini: %w", err)
	}
	return v, nil
}

// Structured sends req with f as its response schema and returns the
// reply, validated.
func Structured(ctx context.Context, client *Client, model string, req *Request, f *Format) (map[string]any, error) {
	r := *req
	gc := GenerationConfig{}
	if r.GenerationConfig != nil {
		gc = *r.GenerationConfig
	}
	gc.ResponseMIMEType, gc.ResponseSchema = "application/json", f.Compiled.Schema
	r.GenerationConfig = &gc
	resp, err := client.GenerateContent(ctx, model, &r)
	if err != nil {
		return nil, err
	}
	var text strings.Builder
	if len(resp.Candidates) > 0 {
		for _, p := range resp.Candidates[0].Content.Parts {
			if !p.Thought {
				text.WriteString(p.Text)
			}
		}
	}
	return f.Parse(text.String())
}
