package policy

import (
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
)

// Trust is the trust section of a policy file: what the gateway does with
// the tools its upstreams bring in (see package trust and docs/trust.md).
// A zero value means the defaults: pins next to the policy file, block on
// change, block malicious and ask for suspicious tools, mark suspicious
// results, no webhook.
type Trust struct {
	// Pins is the pin file. Load makes it absolute, relative to the policy
	// file's folder, and fills in DefaultPins when the file names none. ""
	// (a policy built in code, or none given) keeps pins in memory only.
	Pins string `yaml:"pins,omitempty" json:"pins,omitempty"`
	// OnChange is what a tool gets that is new, or whose definition or
	// upstream changed since it was pinned ("" : block).
	OnChange TrustAction `yaml:"on_change,omitempty" json:"on_change,omitempty"`
	// Scan is what a tool gets that the poisoning scanner flags, per
	// verdict.
	Scan ScanAction `yaml:"scan,omitempty" json:"scan,omitempty"`
	// Results is what happens to a tool's result that looks like an
	// injection, whatever the tool (built in or an upstream's; "" : mark).
	Results ResultAction `yaml:"results,omitempty" json:"results,omitempty"`
	// ResultsTools gives some tools their own action, by tool name or glob
	// (the one glob rule, GlobMap), e.g. {http_request: block, my_tool:
	// off}; a tool no key matches gets Results.
	ResultsTools map[string]ResultAction `yaml:"results_tools,omitempty" json:"results_tools,omitempty"`
	// Webhook is an external guardrail asked about each call and result
	// (nil: none).
	Webhook *Webhook `yaml:"webhook,omitempty" json:"webhook,omitempty"`
}

// DefaultPins is where the pin file goes, relative to the policy file,
// when trust.pins names none.
const DefaultPins = ".toolgate/pins.json"

// TrustAction is what an upstream tool gets that is quarantined or
// flagged.
type TrustAction string

const (
	// TrustBlock keeps the tool out of the list and refuses its calls
	// until a person approves it (toolgate trust approve).
	TrustBlock TrustAction = "block"
	// TrustAsk lists the tool, and each call asks a person first.
	TrustAsk TrustAction = "ask"
	// TrustWarn lists the tool and runs its calls; the audit log records
	// why it was not trusted.
	TrustWarn TrustAction = "warn"
)

func (a TrustAction) valid() bool { return a == TrustBlock || a == TrustAsk || a == TrustWarn }

// Change is the action for new and changed tools (OnChange, block by
// default).
func (t Trust) Change() TrustAction {
	if t.OnChange == "" {
		return TrustBlock
	}
	return t.OnChange
}

// ScanAction says what a flagged tool gets, per verdict of the scanner. In
// the file it is one action for both verdicts (scan: block) or a mapping
// (scan: {malicious: block, suspicious: ask}); a verdict left out keeps
// its default.
type ScanAction struct {
	Malicious  TrustAction `yaml:"malicious,omitempty" json:"malicious,omitempty"`   // "" : block
	Suspicious TrustAction `yaml:"suspicious,omitempty" json:"suspicious,omitempty"` // "" : ask
}

// For returns the action for a verdict of the scanner: "malicious" or
// "suspicious"; any other verdict ("clean") gets "" (nothing to do).
func (s ScanAction) For(verdict string) TrustAction {
	switch verdict {
	case "malicious":
		if s.Malicious == "" {
			return TrustBlock
		}
		return s.Malicious
	case "suspicious":
		if s.Suspicious == "" {
			return TrustAsk
		}
		return s.Suspicious
	}
	return ""
}

// UnmarshalYAML reads scan: ACTION or scan: {malicious: …, suspicious: …}.
func (s *ScanAction) UnmarshalYAML(node ast.Node) error {
	if n, ok := node.(*ast.StringNode); ok {
		s.Malicious, s.Suspicious = TrustAction(n.Value), TrustAction(n.Value)
		return nil
	}
	type plain ScanAction
	var p plain
	if err := yaml.NodeToValue(node, &p, yaml.Strict()); err != nil {
		return err
	}
	*s = ScanAction(p)
	return nil
}

// ResultAction is what happens to a tool's result the result check flags.
type ResultAction string

const (
	// ResultsMark wraps the result in a delimited "untrusted content"
	// marker with a note to the model (the default).
	ResultsMark ResultAction = "mark"
	// ResultsBlock replaces the result with a structured error.
	ResultsBlock ResultAction = "block"
	// ResultsOff passes results as they are, unchecked.
	ResultsOff ResultAction = "off"
)

// ResultMode is the action for flagged results (Results, mark by default).
func (t Trust) ResultMode() ResultAction {
	if t.Results == "" {
		return ResultsMark
	}
	return t.Results
}

// ResultModeFor returns a function giving each tool's action for flagged
// results: its entry in ResultsTools (the one glob rule), else
// ResultMode(). A policy Load returned has its map checked already.
func (t Trust) ResultModeFor() (func(toolName string) ResultAction, error) {
	def := t.ResultMode()
	if len(t.ResultsTools) == 0 {
		return func(string) ResultAction { return def }, nil
	}
	gm, err := NewGlobMap("trust.results_tools", t.ResultsTools)
	if err != nil {
		return nil, err
	}
	return func(name string) ResultAction {
		if a, _, ok := gm.Lookup(name); ok && a != "" {
			return a
		}
		return def
	}, nil
}

func (a ResultAction) valid() bool {
	return a == "" || a == ResultsMark || a == ResultsBlock || a == ResultsOff
}

// Webhook is the trust.webhook block: an external HTTP guardrail that gets
// each tool call and each result as JSON and answers allow, deny (with a
// reason) or a modified payload.
type Webhook struct {
	// URL is where calls and results are POSTed (http or https).
	URL string `yaml:"url" json:"url"`
	// Timeout bounds one exchange (0: DefaultWebhookTimeout).
	Timeout time.Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// OnError is what a call gets when the hook cannot be reached or
	// answers nonsense: deny (the default) or allow.
	OnError OnError `yaml:"on_error,omitempty" json:"on_error,omitempty"`
	// Headers are sent with every request (e.g. an Authorization).
	Headers map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`
	// SecretEnv names the environment variable holding the secret that
	// signs each request ("" : TOOLGATE_WEBHOOK_SECRET, and unsigned while
	// that is unset; a variable named here must be set).
	SecretEnv string `yaml:"secret_env,omitempty" json:"secret_env,omitempty"`
}

// DefaultWebhookTimeout bounds a webhook exchange when the policy does not.
const DefaultWebhookTimeout = 5 * time.Second

// checkTrust validates the block and resolves the pin file against the
// folder of the policy file (file; "" leaves pins as it is). It returns
// the JSON path of the faulty field and what to write instead.
func checkTrust(t *Trust, file string) (where, msg string) {
	const actions = "want block (not listed, not callable until approved), ask (listed, each call asks) or warn (audit only)"
	if t.OnChange != "" && !t.OnChange.valid() {
		return "$.trust.on_change", fmt.Sprintf("trust.on_change %q: %s", t.OnChange, actions)
	}
	if a := t.Scan.Malicious; a != "" && !a.valid() {
		return "$.trust.scan", fmt.Sprintf("trust.scan %q for malicious tools: %s; or a mapping {malicious: block, suspicious: ask}", a, actions)
	}
	if a := t.Scan.Suspicious; a != "" && !a.valid() {
		return "$.trust.scan", fmt.Sprintf("trust.scan %q for suspicious tools: %s; or a mapping {malicious: block, suspicious: ask}", a, actions)
	}
	const results = "want mark (wrap the flagged parts as untrusted content), block (replace the result with an error) or off"
	if !t.Results.valid() {
		return "$.trust.results", fmt.Sprintf("trust.results %q: %s", t.Results, results)
	}
	for _, g := range slices.Sorted(maps.Keys(t.ResultsTools)) {
		if a := t.ResultsTools[g]; !a.valid() || a == "" {
			return "$.trust.results_tools", fmt.Sprintf("trust.results_tools %q: %q: %s", g, a, results)
		}
	}
	if _, err := t.ResultModeFor(); err != nil {
		return "$.trust.results_tools", err.Error()
	}
	if w := t.Webhook; w != nil {
		u, err := url.Parse(w.URL)
		switch {
		case w.URL == "":
			return "$.trust.webhook", "trust.webhook.url is required (e.g. url: http://127.0.0.1:8090/check)"
		case err != nil:
			return "$.trust.webhook.url", fmt.Sprintf("trust.webhook.url: %v", err)
		case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
			return "$.trust.webhook.url", fmt.Sprintf("trust.webhook.url %q: want an http:// or https:// URL with a host", w.URL)
		case w.Timeout < 0:
			return "$.trust.webhook.timeout", "trust.webhook.timeout must not be negative (e.g. timeout: 5s)"
		}
		switch w.OnError {
		case "", OnErrorDeny, OnErrorAllow:
		default:
			return "$.trust.webhook.on_error", fmt.Sprintf("trust.webhook.on_error %q: want deny (refuse the call when the hook fails) or allow", w.OnError)
		}
	}
	if file != "" {
		if t.Pins == "" {
			t.Pins = DefaultPins
		}
		if !filepath.IsAbs(t.Pins) {
			abs, err := filepath.Abs(filepath.Join(filepath.Dir(file), t.Pins))
			if err != nil {
				return "$.trust.pins", fmt.Sprintf("trust.pins %q: %v", t.Pins, err)
			}
			t.Pins = abs
		}
	}
	return "", ""
}
