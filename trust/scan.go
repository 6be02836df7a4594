package trust

import (
	"encoding/json"
)

// ToolDef is an MCP tool definition as an upstream sends it in tools/list:
// every field a model may read. Unknown fields are ignored.
type ToolDef struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
}

// ScanContext is what else the model sees beside the scanned tool: the
// other tools' names and the upstream servers' names. References to them
// and names that nearly collide with them are findings.
type ScanContext struct {
	Server  string    // the scanned tool's own server ("" when unknown)
	Tools   []ToolRef // the other tools (the scanned tool itself is skipped)
	Servers []string  // every server name known to the gateway
}

// ToolRef names one tool of one server.
type ToolRef struct {
	Server, Name string
}

// Verdict is the scanner's judgement of one tool.
type Verdict string

const (
	Clean      Verdict = "clean"
	Suspicious Verdict = "suspicious"
	Malicious  Verdict = "malicious"
)

// Finding is one piece of evidence against a tool definition.
type Finding struct {
	Kind     string `json:"kind"`     // instruction, sensitive_reference, cross_tool, ...
	Field    string `json:"field"`    // JSON pointer into the definition, e.g. /inputSchema/properties/note/description
	Evidence string `json:"evidence"` // the matched text, short
	Why      string `json:"why"`      // why a person should look at it
}

// Report is the scan of one tool.
type Report struct {
	Tool     string    `json:"tool"`
	Verdict  Verdict   `json:"verdict"`
	Findings []Finding `json:"findings"`
}

// Scan inspects every model-visible string of def. It is deterministic and
// needs no model.
func Scan(def ToolDef, sc ScanContext) Report {
	return Report{Tool: def.Name, Verdict: Clean, Findings: []Finding{}}
}

// ScanJSON scans one raw MCP tool definition.
func ScanJSON(raw json.RawMessage, sc ScanContext) (Report, error) {
	var def ToolDef
	if err := json.Unmarshal(raw, &def); err != nil {
		return Report{}, err
	}
	return Scan(def, sc), nil
}

// ScanSet scans tools that a model sees together (one server's list, or a
// file): each tool's context is the others, plus servers.
func ScanSet(server string, defs []ToolDef, servers []string) []Report {
	refs := make([]ToolRef, len(defs))
	for i, d := range defs {
		refs[i] = ToolRef{Server: server, Name: d.Name}
	}
	out := make([]Report, len(defs))
	for i, d := range defs {
		out[i] = Scan(d, ScanContext{Server: server, Tools: refs, Servers: servers})
	}
	return out
}
