package trust

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
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

// Thresholds of the verdict: the sum of the findings' weights. A strong
// finding (4) is malicious alone; a medium one (2) makes a tool suspicious;
// weak ones (1) and notes (0) count only together.
const (
	suspiciousScore = 2
	maliciousScore  = 4
)

// Finding is one piece of evidence against a tool definition.
type Finding struct {
	Kind     string `json:"kind"`     // instruction, sensitive_reference, cross_tool, ...
	Field    string `json:"field"`    // JSON pointer into the definition, e.g. /inputSchema/properties/note/description
	Evidence string `json:"evidence"` // the matched text, at most 80 characters
	Why      string `json:"why"`      // why a person should look at it
	Weight   int    `json:"weight"`   // what it adds to the score: 1 weak, 2 medium, 3-4 strong
}

// Report is the scan of one tool.
type Report struct {
	Tool     string    `json:"tool"`
	Server   string    `json:"server,omitempty"` // the upstream, when known
	Verdict  Verdict   `json:"verdict"`
	Score    int       `json:"score"` // the sum of the findings' weights (of all, when clean)
	Findings []Finding `json:"findings"`
}

// Scan inspects every model-visible string of def: its name, title and
// description, every string of its input and output schemas (descriptions,
// titles, enum values, defaults, examples, const, property names) and its
// annotations. It is deterministic and needs no model.
func Scan(def ToolDef, sc ScanContext) Report {
	return scan(def, sc, newIndex(sc.Tools, sc.Servers))
}

func scan(def ToolDef, sc ScanContext, idx *index) Report {
	st := newState(def, sc, idx)
	r := Report{Tool: def.Name, Server: sc.Server, Findings: []Finding{}}
	seen := map[string]bool{}
	at := func(field string) func(hit) {
		return func(h hit) {
			key := field + "\x00" + h.kind + "\x00" + h.why
			if seen[key] {
				return
			}
			seen[key] = true
			r.Findings = append(r.Findings, Finding{Kind: h.kind, Field: field, Evidence: h.evidence, Why: h.why, Weight: h.weight})
		}
	}

	// the name
	add := at("/name")
	for _, h := range hiddenText(def.Name, true) {
		add(h)
	}
	if mixedName(def.Name) {
		add(hit{KindHiddenText, 3, clip(def.Name), "the name mixes Latin letters with look-alike letters of another script"})
	}
	st.collisions(newNameInfo(def.Name, sc.Server), idx.names, "tool", add)
	if sc.Server != "" {
		st.collisions(newNameInfo(sc.Server, sc.Server), idx.serverNames, "server", at(""))
	}

	// the texts
	for _, t := range []struct{ field, text string }{{"/title", def.Title}, {"/description", def.Description}} {
		if t.text != "" {
			st.text(t.text, at(t.field))
		}
	}
	if len(def.InputSchema) > 0 {
		st.walkJSON(def.InputSchema, "/inputSchema", at)
	}
	if len(def.OutputSchema) > 0 {
		st.walkJSON(def.OutputSchema, "/outputSchema", at)
	}
	if len(def.Annotations) > 0 {
		st.walkJSON(def.Annotations, "/annotations", at)
	}

	// Notes (weight 0) do not count and are not reported; a clean tool
	// reports nothing: its weak findings explain no verdict, and a person
	// reviewing a clean upstream should have nothing to read.
	kept := r.Findings[:0]
	for _, f := range r.Findings {
		if f.Weight > 0 {
			r.Score += f.Weight
			kept = append(kept, f)
		}
	}
	r.Findings = kept
	sort.SliceStable(r.Findings, func(i, j int) bool { return r.Findings[i].Weight > r.Findings[j].Weight })
	switch {
	case r.Score >= maliciousScore:
		r.Verdict = Malicious
	case r.Score >= suspiciousScore:
		r.Verdict = Suspicious
	default:
		r.Verdict = Clean
		r.Findings = []Finding{}
	}
	return r
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
	return ScanUpstreams([]Upstream{{Name: server, Tools: defs}}, servers...)
}

// Upstream is one server's tools as it lists them.
type Upstream struct {
	Name  string
	Tools []ToolDef
}

// ScanUpstreams scans the tools of several servers that one model sees
// together (a gateway's upstreams): each tool's context is every tool of
// every upstream and every server name (the upstreams' and servers). The
// reports follow the order of ups and of their tools.
func ScanUpstreams(ups []Upstream, servers ...string) []Report {
	var refs []ToolRef
	servers = append([]string(nil), servers...)
	names := map[string]bool{}
	for _, s := range servers {
		names[s] = true
	}
	for _, u := range ups {
		for _, d := range u.Tools {
			refs = append(refs, ToolRef{Server: u.Name, Name: d.Name})
		}
		if u.Name != "" && !names[u.Name] {
			names[u.Name] = true
			servers = append(servers, u.Name)
		}
	}
	idx := newIndex(refs, servers)
	var out []Report
	for _, u := range ups {
		for _, d := range u.Tools {
			out = append(out, scan(d, ScanContext{Server: u.Name, Tools: refs, Servers: servers}, idx))
		}
	}
	return out
}

// Limits of the walk over a schema: a hostile schema cannot make a scan slow.
const (
	maxDepth   = 32
	maxStrings = 4096
)

// keys whose string values are machine words, not prose: only hidden text is
// looked for there.
var machineKeys = map[string]bool{"type": true, "format": true, "$schema": true, "$id": true, "$ref": true,
	"pattern": true, "contentEncoding": true, "contentMediaType": true, "$anchor": true, "$dynamicRef": true, "required": true}

// walkJSON visits every string of a JSON value; a property's name is judged
// as a parameter.
func (st *scanState) walkJSON(raw json.RawMessage, ptr string, at func(string) func(hit)) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		at(ptr)(hit{KindHiddenText, 1, "invalid JSON", "the schema is not valid JSON, so a client may read it differently than this scan"})
		return
	}
	n := 0
	var walk func(v any, ptr, key string, depth int)
	walk = func(v any, ptr, key string, depth int) {
		if depth > maxDepth || n > maxStrings {
			return
		}
		switch v := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				p := ptr + "/" + escapePointer(k)
				if key == "properties" || key == "patternProperties" {
					st.param(k, v[k], p, at)
				}
				walk(v[k], p, k, depth+1)
			}
		case []any:
			for i, e := range v {
				walk(e, ptr+"/"+strconv.Itoa(i), key, depth+1)
			}
		case string:
			n++
			if machineKeys[key] {
				for _, h := range hiddenText(v, true) {
					at(ptr)(h)
				}
				return
			}
			st.text(v, at(ptr))
			if key == "default" || key == "const" || key == "examples" {
				if m := reURL.FindString(strings.ToLower(v)); m != "" {
					at(ptr)(hit{KindExfiltration, 1, clip(m), "a URL as a parameter's default: the model will send the call's data there unless told otherwise"})
				}
			}
		}
	}
	walk(v, ptr, "", 0)
}

// param judges one property: its name and what its description asks for.
func (st *scanState) param(name string, v any, ptr string, at func(string) func(hit)) {
	st.params[strings.ToLower(name)] = true
	add := at(ptr)
	for _, h := range hiddenText(name, true) {
		add(h)
	}
	if mixedName(name) {
		add(hit{KindHiddenText, 3, clip(name), "the parameter's name mixes Latin letters with look-alike letters"})
	}
	desc := ""
	if m, ok := v.(map[string]any); ok {
		for _, k := range []string{"description", "title"} {
			if s, ok := m[k].(string); ok {
				desc += s + " "
			}
		}
	}
	if h, ok := outOfScope(name, desc); ok {
		add(h)
	}
	// a default address the call's data goes to
	if m, ok := v.(map[string]any); ok {
		if def, ok := m["default"].(string); ok && reURL.MatchString(strings.ToLower(def)) {
			tok := strings.Join(nameTokens(name), " ")
			if reTransmit.MatchString(foldText(desc).text) || reHookName.MatchString(tok) {
				add(hit{KindExfiltration, 3, clip(def), "a parameter that sends the call's data to an address set by default"})
			}
		}
	}
}

var reHookName = compile(`\b(?:webhook|hook|callback|beacon|telemetry|report|collect|collector|exfil|log|logging|analytics|tracking)\b`)

var (
	reBlockBreak   = compile(`\n\s*\n|\n[ \t]*(?:[-*•]|\d+[.)]|[A-Za-z_][\w ]{0,30}(?:\([^)\n]*\))?:)\s`)
	reSentence     = compile(`[.!?]+["')\]]*\s+`)
	reCapsTag      = compile(`<\s*/?\s*[A-Z][A-Z_-]{3,}\s*>`)
	authorityWords = need("SYSTEM|INTERNAL|ADMIN|PROTOCOL|OVERRIDE|COMPLIANCE|DEV|MAINTENANCE|SECURITY|MANDATORY")
	reAuthority    = compile(`\b(?:[A-Z]{2,}[ _-]+){0,3}(?:SYSTEM|INTERNAL|ADMIN|ADMINISTRATOR|PROTOCOL|OVERRIDE|COMPLIANCE|DEV NOTE|DEVELOPER|MAINTENANCE|SECURITY (?:UPDATE|NOTICE|PROTOCOL|ALERT|CHECK)|MANDATORY)(?:[ _-]+[A-Z]{2,}){0,3}\s*:`)
)

// maxToolBytes bounds the text the sentence rules read in one definition:
// a definition larger than that is itself a finding, and the scan of a
// hostile one stays fast.
const maxToolBytes = 256 << 10

// text scans one model-visible string.
func (st *scanState) text(s string, add func(hit)) {
	for _, h := range hiddenText(s, false) {
		add(h)
	}
	if len(s) > maxScanBytes {
		s = s[:maxScanBytes]
	}
	if st.budget -= len(s); st.budget < 0 {
		if st.budget+len(s) >= 0 {
			add(hit{KindHiddenText, 2, fmt.Sprintf("over %d KiB of text", maxToolBytes>>10), "the definition's text is so long that the rest was not scanned; no person reads that much of a tool's definition either"})
		}
		return
	}
	if strings.Contains(s, "<") {
		if m := reCapsTag.FindString(s); m != "" {
			add(hit{KindInstruction, 3, clip(m), "a tag in capitals (<IMPORTANT>, <INFORMATION>): text dressed up as a message to the model"})
		}
	}
	if folded := foldName(s); holds(folded, authorityWords) {
		if m := reAuthority.FindString(folded); m != "" {
			add(hit{KindInstruction, 2, clip(m), "a header in capitals that speaks as the system or an administrator, not as documentation"})
		}
	}
	for _, block := range splitBlocks(s) {
		f := foldText(block)
		for _, w := range f.mixed {
			add(hit{KindHiddenText, 2, clip(w), "a word mixing Latin letters with look-alike letters of another script: written to slip past filters"})
		}
		st.crossRefs(f.text, add)
		for _, sent := range reSentence.Split(f.text, -1) {
			if sent != "" {
				st.checkSentence(sent, add)
			}
		}
	}
}

// splitBlocks cuts text at paragraph breaks and before list items and
// "Label:" lines, so that a sentence does not run across an Args: list.
func splitBlocks(s string) []string {
	if !strings.Contains(s, "\n") {
		return []string{s}
	}
	var out []string
	start := 0
	for _, m := range reBlockBreak.FindAllStringIndex(s, -1) {
		out = append(out, s[start:m[0]])
		start = m[0] + 1
	}
	return append(out, s[start:])
}

// escapePointer escapes one JSON pointer token (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
