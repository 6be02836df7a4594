package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode"

	"github.com/toolgate/toolgate/tool"
)

// Severity says how much a lint Finding matters.
type Severity string

// Severities, worst first.
const (
	SeverityError   Severity = "error"   // a provider would refuse the tool, or a model will misuse it
	SeverityWarning Severity = "warning" // a model is likely to hesitate or guess
	SeverityInfo    Severity = "info"    // what compiling for the provider changes
)

// Lint rules.
const (
	RuleSchemaInvalid      = "schema-invalid"       // the input schema does not compile or normalize
	RuleProvider           = "provider"             // the provider cannot take the schema
	RuleProviderChange     = "provider-change"      // compiling for the provider changes the schema
	RuleNameInvalid        = "name-invalid"         // a provider refuses the name
	RuleNameDuplicate      = "name-duplicate"       // two tools share a name
	RuleNameStyle          = "name-style"           // not snake_case
	RuleNameCryptic        = "name-cryptic"         // too short, numbered or generic to explain itself
	RuleDescriptionMissing = "description-missing"  // no description, or a few words
	RuleDescriptionWhen    = "description-when"     // does not say when to use the tool
	RuleDescriptionWhenNot = "description-when-not" // does not say when not to use it (or what to use instead)
	RuleDescriptionLong    = "description-long"     // over MaxDescriptionLength
	RuleParamDescription   = "param-description"    // a parameter without a description
	RuleParamType          = "param-type"           // a parameter without a type
	RuleParamDefault       = "param-default"        // an optional parameter that does not say its default
	RuleParamEnum          = "param-enum"           // a closed set of values written in prose, not as an enum
	RuleOverlap            = "overlap"              // two tools' descriptions overlap so much that a model would hesitate
	RuleTooMany            = "too-many-tools"       // more tools than a model chooses among well
)

// Defaults of LintOptions.
const (
	DefaultMaxTools        = 20
	DefaultOverlapWarning  = 0.6
	DefaultOverlapError    = 0.9
	MaxDescriptionLength   = 1024 // characters; OpenAI's limit for a function description
	minDescriptionLength   = 20
	minDescriptionWordsLen = 4
)

// Finding is one problem Lint found.
type Finding struct {
	Tool       string   `json:"tool,omitempty"`    // the tool's name ("" for the whole set)
	Pointer    string   `json:"pointer,omitempty"` // JSON pointer into the tool's input schema, when about a parameter
	Rule       string   `json:"rule"`              // one of the Rule* constants
	Severity   Severity `json:"severity"`
	Message    string   `json:"message"`
	Suggestion string   `json:"suggestion,omitempty"` // what to do about it
}

// String renders the finding on one line.
func (f Finding) String() string {
	var b strings.Builder
	b.WriteString(string(f.Severity))
	b.WriteString(" ")
	if f.Tool != "" {
		b.WriteString(f.Tool)
		if f.Pointer != "" {
			b.WriteString(f.Pointer)
		}
		b.WriteString(": ")
	}
	b.WriteString(f.Message)
	b.WriteString(" [" + f.Rule + "]")
	if f.Suggestion != "" {
		b.WriteString(" — " + f.Suggestion)
	}
	return b.String()
}

// LintOptions tune Lint. The zero value checks against no provider with
// the defaults.
type LintOptions struct {
	// Provider, when set, also compiles every schema for it: a schema it
	// cannot take is an error, and each change compiling makes is an info.
	Provider Provider
	// MaxTools is how many tools one request may offer before a warning
	// (DefaultMaxTools when 0).
	MaxTools int
	// OverlapWarning and OverlapError are the cosine similarities of two
	// descriptions' word sets from which they overlap too much
	// (DefaultOverlapWarning and DefaultOverlapError when 0).
	OverlapWarning, OverlapError float64
}

// Lint checks tool definitions against what makes a model use them well
// and, when opts.Provider is set, against what that provider accepts:
// self-explaining snake_case names (not "rf" nor "tool_03"), a
// description that says what the tool does, when to use it and when not
// (or what to use instead), every parameter described and typed, an
// optional parameter's default stated, closed sets of values as enums
// rather than prose, no two descriptions so alike that a model would
// hesitate (cosine similarity of their word sets), and at most
// opts.MaxTools tools in one request. Findings come sorted: errors first,
// then by tool and pointer.
func Lint(defs []tool.Definition, opts LintOptions) []Finding {
	if opts.MaxTools <= 0 {
		opts.MaxTools = DefaultMaxTools
	}
	if opts.OverlapWarning <= 0 {
		opts.OverlapWarning = DefaultOverlapWarning
	}
	if opts.OverlapError <= 0 {
		opts.OverlapError = DefaultOverlapError
	}
	var out []Finding
	names := map[string]int{}
	for _, d := range defs {
		names[d.Name]++
	}
	for _, d := range defs {
		out = append(out, lintTool(d, names, opts)...)
	}
	for name, n := range names {
		if n > 1 {
			out = append(out, Finding{Tool: name, Rule: RuleNameDuplicate, Severity: SeverityError,
				Message:    fmt.Sprintf("%d tools are named %q", n, name),
				Suggestion: "give each tool its own name: a model calls tools by name"})
		}
	}
	out = append(out, lintOverlap(defs, opts)...)
	if len(defs) > opts.MaxTools {
		out = append(out, Finding{Rule: RuleTooMany, Severity: SeverityWarning,
			Message:    fmt.Sprintf("%d tools in one request; models choose worse among more than about %d", len(defs), opts.MaxTools),
			Suggestion: "offer a subset per task (tool groups), or a tool_search meta-tool that finds the others"})
	}
	rank := map[Severity]int{SeverityError: 0, SeverityWarning: 1, SeverityInfo: 2}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if rank[a.Severity] != rank[b.Severity] {
			return rank[a.Severity] < rank[b.Severity]
		}
		if a.Tool != b.Tool {
			return a.Tool < b.Tool
		}
		return a.Pointer < b.Pointer
	})
	return out
}

// The expressions compile on first use (lazyRegexp): most programs that
// link this package never lint.
var (
	snakeCase     = lazyRegexp(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	genericWords  = []string{"tool", "tools", "func", "function", "fn", "action", "cmd", "command", "do", "run", "exec", "misc", "util", "utils", "helper", "handler", "process", "test", "temp", "tmp", "foo", "bar", "stuff", "thing"}
	whenCue       = lazyRegexp(`(?i)\b(use (it|this|when|for|to)|when\b|before\b|after\b|if you\b|in order to\b)`)
	whenNotCue    = lazyRegexp(`(?i)\b(do not|don't|does not|not for|not to|never|instead|rather than|only (when|for|if|needed|to)|unless|avoid|prefer)\b`)
	proseEnum     = lazyRegexp(`(?i)(\b(one of|either|possible values|valid values|allowed values|must be|can be|options)\b[^.]{0,20}['"` + "`" + `]\w[\w -]*['"` + "`" + `]\s*(,|or|/|\|)\s*['"` + "`" + `]\w)|(['"` + "`" + `]\w[\w-]*['"` + "`" + `]\s*(,|/|\|)\s*['"` + "`" + `]\w[\w-]*['"` + "`" + `]\s*(,|or|/|\|)\s*(or\s+)?['"` + "`" + `]\w)`)
	defaultCue    = lazyRegexp(`(?i)\b(default|defaults|by default|if (omitted|not given|not set|absent|left out)|when (omitted|not given|absent|left out)|otherwise|all files|none\b)`)
	geminiNameRE  = lazyRegexp(`^[a-zA-Z_][a-zA-Z0-9_.:-]*$`) // and at most 64 bytes
	stopWordsList = strings.Fields(`a an the and or but of to in on at by for with from as is are be been it its this that these those
		into than then there their them they you your we our not no do does did can may might must will would should
		use used using one any all each every when which what who how also only more most such other some out up so if`)
)

func lintTool(d tool.Definition, names map[string]int, opts LintOptions) []Finding {
	var out []Finding
	add := func(ptr, rule string, sev Severity, msg, sugg string) {
		out = append(out, Finding{Tool: d.Name, Pointer: ptr, Rule: rule, Severity: sev, Message: msg, Suggestion: sugg})
	}

	// The name.
	name := d.Name
	switch {
	case !toolNameOK(name):
		add("", RuleNameInvalid, SeverityError, fmt.Sprintf("the name %q is not ^[a-zA-Z0-9_-]{1,64}$, which OpenAI and Anthropic require", name),
			fmt.Sprintf("rename it, e.g. %q", suggestName(name)))
	case opts.Provider == Gemini && (len(name) > 64 || !geminiNameRE().MatchString(name)):
		add("", RuleNameInvalid, SeverityError, fmt.Sprintf("the name %q must start with a letter or _ for Gemini", name), fmt.Sprintf("rename it, e.g. %q", suggestName(name)))
	}
	if toolNameOK(name) && !snakeCase().MatchString(name) {
		add("", RuleNameStyle, SeverityWarning, fmt.Sprintf("the name %q is not snake_case", name), fmt.Sprintf("use lower-case words joined by _, e.g. %q", suggestName(name)))
	}
	if why := crypticName(name); why != "" {
		add("", RuleNameCryptic, SeverityError, fmt.Sprintf("the name %q does not explain itself: %s", name, why),
			"name the action and its object in words, e.g. read_file, search_orders, send_email")
	}

	// The description.
	desc := strings.TrimSpace(d.Description)
	switch {
	case desc == "":
		add("", RuleDescriptionMissing, SeverityError, "no description", "say what the tool does, when to use it, and when to use another tool instead")
	case len(desc) < minDescriptionLength || len(strings.Fields(desc)) < minDescriptionWordsLen:
		add("", RuleDescriptionMissing, SeverityError, fmt.Sprintf("the description %q is too short to choose the tool by", desc), "say what the tool does, when to use it, and when to use another tool instead")
	default:
		if !whenCue().MatchString(desc) {
			add("", RuleDescriptionWhen, SeverityWarning, "the description does not say when to use the tool", `add a sentence such as "Use it to …" or "Use it when …"`)
		}
		if !whenNotCue().MatchString(desc) && !mentionsOther(desc, name, names) {
			add("", RuleDescriptionWhenNot, SeverityWarning, "the description does not say when not to use the tool, nor what to use instead", `add a sentence such as "Not for …; use other_tool for that."`)
		}
		if len([]rune(desc)) > MaxDescriptionLength {
			add("", RuleDescriptionLong, SeverityWarning, fmt.Sprintf("the description has %d characters, over %d", len([]rune(desc)), MaxDescriptionLength), "keep the description short; move details into the parameters' descriptions")
		}
	}

	// The schema and its parameters.
	raw := d.InputSchema
	if len(raw) == 0 {
		raw = json.RawMessage(`{"type":"object"}`)
	}
	doc, _, err := normalizeDoc(raw, false)
	if err != nil {
		add("", RuleSchemaInvalid, SeverityError, "the input schema is not usable: "+err.Error(), "fix the schema; it must be a JSON Schema object describing the arguments object")
		return out
	}
	if _, err := Compile(raw); err != nil {
		add("", RuleSchemaInvalid, SeverityError, "the input schema does not compile as JSON Schema 2020-12: "+err.Error(), "normalize it first (schema.Normalize) or fix it")
	}
	lintParams(doc, "", 0, add)

	if opts.Provider != "" {
		c, err := CompileFor(opts.Provider, raw)
		switch {
		case errors.Is(err, ErrUnsupported) || err != nil:
			add("", RuleProvider, SeverityError, fmt.Sprintf("%s cannot take the schema: %v", opts.Provider, err), "simplify the schema (fewer properties, less nesting, smaller enums)")
		default:
			for _, ch := range c.Changes {
				add(ch.Pointer, RuleProviderChange, SeverityInfo, fmt.Sprintf("%s: %s (%s)", opts.Provider, ch.Change, ch.Reason), "")
			}
		}
	}
	return out
}

// lintParams checks the properties of an object schema, recursively.
func lintParams(node map[string]any, ptr string, depth int, add func(ptr, rule string, sev Severity, msg, sugg string)) {
	if depth > 32 {
		return
	}
	props, _ := node["properties"].(map[string]any)
	req := map[string]bool{}
	if r, ok := node["required"].([]any); ok {
		for _, n := range r {
			if s, ok := n.(string); ok {
				req[s] = true
			}
		}
	}
	for _, name := range sortedKeys(props) {
		p, ok := props[name].(map[string]any)
		if !ok {
			continue
		}
		pp := ptr + "/properties/" + escapeToken(name)
		desc, _ := p["description"].(string)
		if strings.TrimSpace(desc) == "" {
			sev := SeverityError
			if depth > 0 {
				sev = SeverityWarning
			}
			if _, isRef := p["$ref"]; isRef && depth > 0 {
				sev = SeverityWarning
			}
			add(pp, RuleParamDescription, sev, fmt.Sprintf("the parameter %q has no description", name), "say what it is, its unit or format, and an example")
		}
		if !hasAny(p, "type", "enum", "const", "$ref", "anyOf", "oneOf", "allOf") {
			add(pp, RuleParamType, SeverityWarning, fmt.Sprintf("the parameter %q has no type", name), `give it a type ("string", "integer", …) so a model knows what to send`)
		}
		if !req[name] {
			if _, ok := p["default"]; !ok && !defaultCue().MatchString(desc) {
				add(pp, RuleParamDefault, SeverityWarning, fmt.Sprintf("the optional parameter %q does not say what happens when it is left out", name),
					`add "default", or say in the description what leaving it out means`)
			}
		}
		if _, hasEnum := p["enum"]; !hasEnum && slices.Contains(typeNames(p["type"]), "string") && proseEnum().MatchString(desc) {
			add(pp, RuleParamEnum, SeverityWarning, fmt.Sprintf("the parameter %q lists its values in prose", name), `list a closed set of values as "enum": models then send exactly one of them`)
		}
		lintParams(p, pp, depth+1, add)
		if items, ok := p["items"].(map[string]any); ok {
			lintParams(items, pp+"/items", depth+1, add)
		}
	}
}

// crypticName says why a name does not explain itself, or "".
func crypticName(name string) string {
	words := strings.FieldsFunc(strings.ToLower(splitCamel(name)), func(r rune) bool { return r == '_' || r == '-' || r == '.' || r == ' ' })
	letters := 0
	for _, r := range name {
		if unicode.IsLetter(r) {
			letters++
		}
	}
	if letters < 4 {
		return "too short"
	}
	for _, w := range words {
		if strings.Trim(w, "0123456789") == "" {
			return "it is numbered"
		}
	}
	meaningful := 0
	for _, w := range words {
		w = strings.TrimRight(w, "0123456789")
		if len(w) >= 3 && !slices.Contains(genericWords, w) {
			meaningful++
		}
	}
	if meaningful == 0 {
		return "its words are generic or abbreviations"
	}
	return ""
}

// splitCamel puts a _ between camelCase words.
func splitCamel(s string) string {
	var b strings.Builder
	prev := rune(0)
	for _, r := range s {
		if unicode.IsUpper(r) && unicode.IsLower(prev) {
			b.WriteByte('_')
		}
		b.WriteRune(r)
		prev = r
	}
	return b.String()
}

// suggestName proposes a snake_case name.
func suggestName(name string) string {
	s := strings.ToLower(splitCamel(name))
	s = ToolName(s)
	s = strings.ReplaceAll(s, "-", "_")
	return strings.Trim(s, "_")
}

// mentionsOther reports whether desc names another tool of the set.
func mentionsOther(desc, self string, names map[string]int) bool {
	for n := range names {
		if n != self && len(n) >= 4 && strings.Contains(desc, n) {
			return true
		}
	}
	return false
}

// lintOverlap finds pairs of tools whose descriptions are so alike that a
// model would hesitate between them.
func lintOverlap(defs []tool.Definition, opts LintOptions) []Finding {
	stop := map[string]bool{}
	for _, w := range stopWordsList {
		stop[w] = true
	}
	sets := make([]map[string]bool, len(defs))
	for i, d := range defs {
		text := d.Description
		for _, other := range defs { // naming another tool is not overlap
			if len(other.Name) >= 4 {
				text = strings.ReplaceAll(text, other.Name, " ")
			}
		}
		sets[i] = map[string]bool{}
		for _, w := range descWords(text, stop) {
			sets[i][w] = true
		}
	}
	var out []Finding
	for i := range defs {
		for j := i + 1; j < len(defs); j++ {
			a, b := sets[i], sets[j]
			if len(a) == 0 || len(b) == 0 || defs[i].Name == defs[j].Name {
				continue
			}
			common := 0
			for w := range a {
				if b[w] {
					common++
				}
			}
			cos := float64(common) / math.Sqrt(float64(len(a))*float64(len(b)))
			sev := Severity("")
			switch {
			case cos >= opts.OverlapError:
				sev = SeverityError
			case cos >= opts.OverlapWarning:
				sev = SeverityWarning
			default:
				continue
			}
			out = append(out, Finding{Tool: defs[i].Name, Rule: RuleOverlap, Severity: sev,
				Message:    fmt.Sprintf("its description overlaps %q's (cosine %.2f of their word sets): a model may hesitate between them", defs[j].Name, cos),
				Suggestion: "say in each description what sets it apart and when to use the other one, or merge the two tools"})
		}
	}
	return out
}

// descWords are the lower-case words of s (letters and digits, at least 3
// long), stemmed crudely (a final "s" dropped), without stop words.
func descWords(s string, stop map[string]bool) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
			w = w[:len(w)-1]
		}
		if len(w) >= 3 && !stop[w] {
			out = append(out, w)
		}
	}
	return out
}

// lazyRegexp returns expr compiled on first use, once: a compile at init
// costs the start of every program that links the package.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
