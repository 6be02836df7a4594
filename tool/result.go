package tool

import (
	"encoding/json"
	"fmt"
)

// Content is one block of a result, shaped as MCP's content blocks.
type Content struct {
	Type     string // "text", "image" or "resource"
	Text     string // text, or a resource's text
	Data     []byte // image bytes, or a resource's binary contents
	MIMEType string
	URI      string // resource only
}

// TextContent returns a text block.
func TextContent(s string) Content { return Content{Type: "text", Text: s} }

// ImageContent returns an image block.
func ImageContent(data []byte, mimeType string) Content {
	return Content{Type: "image", Data: data, MIMEType: mimeType}
}

type wireResource struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     []byte `json:"blob,omitempty"`
}

type wireContent struct {
	Type     string        `json:"type"`
	Text     string        `json:"text,omitempty"`
	Data     []byte        `json:"data,omitempty"`
	MIMEType string        `json:"mimeType,omitempty"`
	Resource *wireResource `json:"resource,omitempty"`
}

// MarshalJSON writes c in MCP's shape.
func (c Content) MarshalJSON() ([]byte, error) {
	w := wireContent{Type: c.Type}
	switch c.Type {
	case "text":
		// An empty text block still needs its "text" member.
		return json.Marshal(struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{c.Type, c.Text})
	case "image", "audio":
		w.Data, w.MIMEType = c.Data, c.MIMEType
	case "resource":
		w.Resource = &wireResource{URI: c.URI, MIMEType: c.MIMEType, Text: c.Text, Blob: c.Data}
	default:
		return nil, fmt.Errorf("tool: unknown content type %q", c.Type)
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads a block in MCP's shape.
func (c *Content) UnmarshalJSON(b []byte) error {
	var w wireContent
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*c = Content{Type: w.Type, Text: w.Text, Data: w.Data, MIMEType: w.MIMEType}
	if w.Resource != nil {
		c.URI, c.MIMEType, c.Text, c.Data = w.Resource.URI, w.Resource.MIMEType, w.Resource.Text, w.Resource.Blob
	}
	return nil
}

// Result is what a call produced: content for the model, an optional
// structured value (matching the tool's output schema), an Error when the
// call failed, and metadata about how it ran (repairs made, ranges shown, …).
type Result struct {
	Content    []Content
	Structured any
	Error      *Error
	Meta       map[string]any
	// Relay is the bytes a gateway received the result as (see Relay),
	// sent on only while the result says exactly what they do.
	Relay *Relay `json:"-"`
}

// IsError reports whether the call failed.
func (r Result) IsError() bool { return r.Error != nil }

// Text is the concatenation of r's text blocks.
func (r Result) Text() string {
	var s string
	for i, c := range r.Content {
		if c.Type == "text" {
			if i > 0 && s != "" {
				s += "\n"
			}
			s += c.Text
		}
	}
	return s
}

// MetaProgress is the Result.Meta key (value true) by which a tool says
// that a call made progress though it repeats an earlier one's arguments
// (a read that waited, or got new output): the loop guard does not count
// it as a repeat.
const MetaProgress = "toolgate/progress"

// SetMeta records a metadata entry on r.
func (r *Result) SetMeta(key string, value any) {
	if r.Meta == nil {
		r.Meta = map[string]any{}
	}
	r.Meta[key] = value
}

// TextResult is a successful result of one text block.
func TextResult(s string) Result { return Result{Content: []Content{TextContent(s)}} }

// ErrorResult is a failed result: its one text block is e's model-facing text.
func ErrorResult(e *Error) Result {
	return Result{Content: []Content{TextContent(e.Text())}, Error: e}
}

type wireResult struct {
	Content    []Content      `json:"content"`
	Structured any            `json:"structured,omitempty"`
	IsError    bool           `json:"is_error"`
	Error      *Error         `json:"error,omitempty"`
	Meta       map[string]any `json:"meta,omitempty"`
}

// MarshalJSON writes the shape of toolgate's CLI contract:
// {"content":[…],"structured":…,"is_error":bool,"error":{…},"meta":{…}}.
func (r Result) MarshalJSON() ([]byte, error) {
	content := r.Content
	if content == nil {
		content = []Content{}
	}
	return json.Marshal(wireResult{content, r.Structured, r.Error != nil, r.Error, r.Meta})
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (r *Result) UnmarshalJSON(b []byte) error {
	var w wireResult
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = Result{Content: w.Content, Structured: w.Structured, Error: w.Error, Meta: w.Meta}
	return nil
}
