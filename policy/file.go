package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/toolgate/toolgate/tool"
)

// File is the YAML shape of a policy file (toolgate.yaml). See
// testdata/toolgate.example.yaml for every field with a comment, and
// toolgate.schema.json for the JSON Schema.
type File struct {
	Version     int                  `yaml:"version,omitempty"`
	Roots       []string             `yaml:"roots,omitempty"`
	Mode        Mode                 `yaml:"mode,omitempty"`
	MaxLevel    *int                 `yaml:"max_level,omitempty"`
	Levels      map[int]Treatment    `yaml:"levels,omitempty"`
	DefaultDeny *bool                `yaml:"default_deny,omitempty"`
	Deny        []RuleEntry          `yaml:"deny,omitempty"`
	Ask         []RuleEntry          `yaml:"ask,omitempty"`
	Allow       []RuleEntry          `yaml:"allow,omitempty"`
	Roles       map[string]FileRole  `yaml:"roles,omitempty"`
	Principals  map[string]Principal `yaml:"principals,omitempty"`
	DefaultRole string               `yaml:"default_role,omitempty"`
	Limits      Limits               `yaml:"limits,omitempty"`
	Approvals   Approvals            `yaml:"approvals,omitempty"`
	Output      Output               `yaml:"output,omitempty"`
	Secrets     Secrets              `yaml:"secrets,omitempty"`
	Files       Files                `yaml:"files,omitempty"`
	Processes   Processes            `yaml:"processes,omitempty"`
	Sandbox     Sandbox              `yaml:"sandbox,omitempty"`
	Auth        *Auth                `yaml:"auth,omitempty"`
	State       State                `yaml:"state,omitempty"`
	HTTP        HTTP                 `yaml:"http,omitempty"`
	Trust       Trust                `yaml:"trust,omitempty"`
	Console     Console              `yaml:"console,omitempty"`
	Selection   Selection            `yaml:"selection,omitempty"`
}

// FileRole is a role as a policy file writes it.
type FileRole struct {
	MaxLevel *int        `yaml:"max_level,omitempty"`
	Admin    bool        `yaml:"admin,omitempty"`
	Deny     []RuleEntry `yaml:"deny,omitempty"`
	Ask      []RuleEntry `yaml:"ask,omitempty"`
	Allow    []RuleEntry `yaml:"allow,omitempty"`
}

// RuleEntry is one rule of a list: either a string ("Bash(npm test:*)") or
// an object with the rule, the reason shown when it decides a call, and
// examples checked when the file loads.
type RuleEntry struct {
	Rule     string   `yaml:"rule"`
	Reason   string   `yaml:"reason,omitempty"`
	Examples Examples `yaml:"examples,omitempty"`

	line, col int
}

// Examples are inputs a rule must and must not match: commands for command
// rules, paths for path rules, URLs or hosts for domain rules, tool names for
// bare tool rules. For an allow rule "match" means the rule alone allows the
// whole input; for deny and ask rules it means the rule catches some part.
type Examples struct {
	Match    []string `yaml:"match,omitempty"`
	NotMatch []string `yaml:"not_match,omitempty"`
}

// UnmarshalYAML reads a rule entry from a string or a mapping, keeping its
// position for later errors.
func (e *RuleEntry) UnmarshalYAML(node ast.Node) error {
	tok := node.GetToken()
	switch n := node.(type) {
	case *ast.MappingNode:
		if len(n.Values) > 0 {
			tok = n.Values[0].Key.GetToken()
		}
	case *ast.MappingValueNode:
		tok = n.Key.GetToken()
	}
	if tok != nil {
		e.line, e.col = tok.Position.Line, tok.Position.Column
	}
	switch n := node.(type) {
	case *ast.StringNode:
		e.Rule = n.Value
		return nil
	case *ast.MappingNode, *ast.MappingValueNode:
		type plain RuleEntry
		var p plain
		if err := yaml.NodeToValue(node, &p, yaml.Strict()); err != nil {
			return err
		}
		line, col := e.line, e.col
		*e = RuleEntry(p)
		e.line, e.col = line, col
		if e.Rule == "" {
			return &FileError{Line: line, Column: col, Msg: "a rule object needs \"rule\" (e.g. rule: Bash(npm test:*))"}
		}
		return nil
	}
	return &FileError{Line: e.line, Column: e.col, Msg: "a rule is a string or an object {rule, reason, examples}"}
}

// FileError is a problem in a policy file, with where it is (line and
// column count from 1; 0 when unknown).
type FileError struct {
	File         string
	Line, Column int
	Msg          string
}

func (e *FileError) Error() string {
	name := e.File
	if name == "" {
		name = "policy"
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", name, e.Line, e.Column, e.Msg)
	}
	return name + ": " + e.Msg
}

// yamlError turns a goccy/go-yaml error into a FileError with its position.
func yamlError(err error) *FileError {
	var fe *FileError
	if errors.As(err, &fe) {
		return fe
	}
	type positioned interface {
		GetToken() *token.Token
		GetMessage() string
	}
	var pe positioned
	if errors.As(err, &pe) && pe.GetToken() != nil {
		p := pe.GetToken().Position
		return &FileError{Line: p.Line, Column: p.Column, Msg: pe.GetMessage()}
	}
	if m := bracketPos().FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		col, _ := strconv.Atoi(m[2])
		return &FileError{Line: line, Column: col, Msg: m[3]}
	}
	return &FileError{Msg: err.Error()}
}

var bracketPos = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\[(\d+):(\d+)\] (.*)`) })

// quotedValue finds the value an error message quotes (time: invalid
// duration "soon").
var quotedValue = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`"([^"]*)"`) })

// locateValue gives an error without a position the position of the scalar
// it quotes, when the file has exactly one such scalar.
func locateValue(tree *ast.File, msg string, fe *FileError) {
	m := quotedValue().FindStringSubmatch(msg)
	if m == nil {
		return
	}
	var found []*token.Token
	for _, doc := range tree.Docs {
		ast.Walk(visitor(func(n ast.Node) {
			if tok := n.GetToken(); tok != nil && n.Type() == ast.StringType && tok.Value == m[1] {
				found = append(found, tok)
			}
		}), doc)
	}
	if len(found) == 1 {
		fe.Line, fe.Column = found[0].Position.Line, found[0].Position.Column
	}
}

type visitor func(ast.Node)

func (v visitor) Visit(n ast.Node) ast.Visitor {
	v(n)
	return v
}

// noPanic runs a YAML library call, turning a panic inside it (the fuzzer
// found inputs that crash goccy/go-yaml) into an error.
func noPanic(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the YAML parser failed on this file (%v); check its syntax near tags (!) and anchors (&, *)", r)
		}
	}()
	return fn()
}

// Parse reads a policy from YAML. Unknown fields are errors, and every
// error is a *FileError naming the line and column. Relative roots stay
// relative to the current folder (Load makes them relative to the file).
func Parse(data []byte) (*Policy, error) {
	p, err := parse(data, "")
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Load reads a policy file. Relative roots are taken from the file's folder,
// and the policy remembers the file as its Source (where "always" approvals
// are written).
func Load(file string) (*Policy, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	p, err := parse(data, file)
	if err != nil {
		return nil, err
	}
	return p, nil
}

func parse(data []byte, file string) (*Policy, error) {
	fail := func(fe *FileError) error {
		fe.File = file
		return fe
	}
	var tree *ast.File
	err := noPanic(func() (err error) {
		tree, err = parser.ParseBytes(data, 0)
		return err
	})
	if err != nil {
		return nil, fail(yamlError(err))
	}
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(data), yaml.Strict())
	if err := noPanic(func() error { return dec.Decode(&f) }); err != nil && !errors.Is(err, io.EOF) {
		fe := yamlError(err)
		if fe.Line == 0 {
			locateValue(tree, err.Error(), fe)
		}
		return nil, fail(fe)
	}
	at := func(p string, msg string, args ...any) error {
		fe := &FileError{Msg: fmt.Sprintf(msg, args...)}
		if yp, err := yaml.PathString(p); err == nil {
			if n, err := yp.FilterFile(tree); err == nil && n != nil && n.GetToken() != nil {
				fe.Line, fe.Column = n.GetToken().Position.Line, n.GetToken().Position.Column
			}
		}
		return fail(fe)
	}

	p := &Policy{Mode: ModeDefault, MaxLevel: tool.LevelHigh, Reasons: map[string]string{}, Source: file}
	if f.Version > 1 {
		return nil, at("$.version", "version %d is newer than this toolgate understands (1)", f.Version)
	}
	if f.Mode != "" {
		if !f.Mode.Valid() {
			return nil, at("$.mode", "unknown mode %q (want default, read-only, plan, accept-edits or bypass)", f.Mode)
		}
		p.Mode = f.Mode.canonical()
	}
	if f.MaxLevel != nil {
		if !tool.Level(*f.MaxLevel).Valid() {
			return nil, at("$.max_level", "max_level %d is not a level (0-3)", *f.MaxLevel)
		}
		p.MaxLevel = tool.Level(*f.MaxLevel)
	}
	for lv, t := range f.Levels {
		if !tool.Level(lv).Valid() {
			return nil, at("$.levels", "levels: %d is not a level (0-3)", lv)
		}
		if !t.Valid() {
			return nil, at(fmt.Sprintf("$.levels.%d", lv), "level %d: unknown treatment %q (want auto, log, ask, confirm or deny)", lv, t)
		}
		p.Levels[lv] = t
	}
	for _, r := range f.Roots {
		if file != "" && !filepath.IsAbs(r) {
			abs, err := filepath.Abs(filepath.Join(filepath.Dir(file), r))
			if err != nil {
				return nil, at("$.roots", "root %q: %v", r, err)
			}
			r = abs
		}
		p.Roots = append(p.Roots, r)
	}
	if f.DefaultDeny == nil || *f.DefaultDeny {
		for _, d := range DefaultDeny() {
			p.Deny = append(p.Deny, d.Rule)
			p.Reasons[d.Rule] = d.Reason
		}
		p.Guarded = DefaultGuarded()
		ciReasons(p.Reasons)
	}
	type list struct {
		where   string
		entries []RuleEntry
		dst     *[]string
		allow   bool
	}
	lists := []list{{"deny", f.Deny, &p.Deny, false}, {"ask", f.Ask, &p.Ask, false}, {"allow", f.Allow, &p.Allow, true}}
	p.Roles = map[string]Role{}
	for name, fr := range f.Roles {
		r := Role{Admin: fr.Admin}
		if fr.MaxLevel != nil {
			lv := tool.Level(*fr.MaxLevel)
			if !lv.Valid() {
				return nil, at("$.roles."+quoteKey(name)+".max_level", "role %q: max_level %d is not a level (0-3)", name, *fr.MaxLevel)
			}
			r.MaxLevel = &lv
		}
		p.Roles[name] = r
	}
	// role lists are filled after the map holds the Role values
	roleLists := map[string]*Role{}
	for name := range f.Roles {
		r := p.Roles[name]
		roleLists[name] = &r
		fr := f.Roles[name]
		where := "role " + name
		lists = append(lists, list{where + " deny", fr.Deny, &r.Deny, false}, list{where + " ask", fr.Ask, &r.Ask, false}, list{where + " allow", fr.Allow, &r.Allow, true})
	}
	p.roots = newRoots(p.Roots)
	for _, l := range lists {
		for i, e := range l.entries {
			where := fmt.Sprintf("%s[%d]", l.where, i)
			r, err := compileRule(e.Rule)
			if err != nil {
				return nil, fail(&FileError{Line: e.line, Column: e.col, Msg: where + ": " + err.Error()})
			}
			if err := checkExamples(p, r, e.Examples, l.allow); err != nil {
				return nil, fail(&FileError{Line: e.line, Column: e.col, Msg: fmt.Sprintf("%s: rule %q: %v", where, e.Rule, err)})
			}
			*l.dst = append(*l.dst, e.Rule)
			if e.Reason != "" {
				p.Reasons[e.Rule] = e.Reason
			}
		}
	}
	for name, r := range roleLists {
		p.Roles[name] = *r
	}
	p.Principals = map[string]Principal{}
	for name, pr := range f.Principals {
		if _, ok := p.Roles[pr.Role]; !ok && pr.Role != "" {
			return nil, at("$.principals."+quoteKey(name)+".role", "principal %q has role %q, which the roles section does not define", name, pr.Role)
		}
		if pr.MaxLevel != nil && !pr.MaxLevel.Valid() {
			return nil, at("$.principals."+quoteKey(name)+".max_level", "principal %q: max_level %d is not a level (0-3)", name, *pr.MaxLevel)
		}
		p.Principals[name] = pr
	}
	if f.DefaultRole != "" {
		if _, ok := p.Roles[f.DefaultRole]; !ok {
			return nil, at("$.default_role", "default_role %q is not a role of the roles section", f.DefaultRole)
		}
		p.DefaultRole = f.DefaultRole
	}
	p.Limits, p.Approvals, p.Output, p.Secrets, p.Files, p.State, p.HTTP = f.Limits, f.Approvals, f.Output, f.Secrets, f.Files, f.State, f.HTTP
	p.Processes = f.Processes
	if where, msg := checkSandbox(f.Sandbox); msg != "" {
		return nil, at(where, "%s", msg)
	}
	p.Sandbox = f.Sandbox
	if r := p.State.Redis; r != nil {
		if field, msg := r.check(); field != "" {
			return nil, at("$.state.redis."+field, "%s", msg)
		}
	}
	if f.Auth != nil {
		if where, msg := checkAuth(f.Auth, p.Roles); msg != "" {
			return nil, at(where, "%s", msg)
		}
		if j := f.Auth.JWT; j != nil && j.JWKSFile != "" && file != "" && !filepath.IsAbs(j.JWKSFile) {
			j.JWKSFile = filepath.Join(filepath.Dir(file), j.JWKSFile) // like roots: relative to the file
		}
		p.Auth = f.Auth
	}
	p.Trust = f.Trust
	p.Console = f.Console
	p.Selection = f.Selection
	if where, msg := checkSelection(p.Selection); msg != "" {
		return nil, at(where, "%s", msg)
	}
	if where, msg := checkConsole(p.Console); msg != "" {
		return nil, at(where, "%s", msg)
	}
	if where, msg := checkTrust(&p.Trust, file); msg != "" {
		return nil, at(where, "%s", msg)
	}
	if err := checkSections(p, at); err != nil {
		return nil, err
	}
	if err := p.Check(); err != nil {
		return nil, fail(&FileError{Msg: err.Error()})
	}
	return p, nil
}

func quoteKey(k string) string {
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return "'" + k + "'"
		}
	}
	return k
}

// checkSections validates the limits, approvals, output and secrets
// sections.
func checkSections(p *Policy, at func(string, string, ...any) error) error {
	for section, rates := range map[string]map[string]Rate{"tools": p.Limits.Tools, "tool_principal": p.Limits.ToolPrincipal} {
		for g, r := range rates {
			if err := checkRate(r); err != nil {
				return at("$.limits."+section, "limits.%s %q: %v", section, g, err)
			}
		}
		if _, err := NewGlobMap("limits."+section, rates); err != nil {
			return at("$.limits."+section, "%v", err)
		}
	}
	if err := checkRate(p.Limits.Principal); err != nil {
		return at("$.limits.principal", "limits.principal: %v", err)
	}
	if p.Limits.Concurrency < 0 {
		return at("$.limits.concurrency", "limits.concurrency must not be negative")
	}
	if l := p.Limits.Loop; l.Window < 0 || l.Max < 0 || l.Cycles < 0 {
		return at("$.limits.loop", "limits.loop: max, window and cycles must not be negative")
	}
	a := p.Approvals
	if a.Timeout < 0 {
		return at("$.approvals.timeout", "approvals.timeout must not be negative")
	}
	switch a.DefaultScope {
	case "", Once, Session, Always:
	default:
		return at("$.approvals.default_scope", "approvals.default_scope %q: want once, session or always", a.DefaultScope)
	}
	if a.DenialStreak < 0 {
		return at("$.approvals.denial_streak", "approvals.denial_streak must not be negative")
	}
	if a.TokenEnv != "" && !envName().MatchString(a.TokenEnv) {
		return at("$.approvals.token_env", "approvals.token_env %q is not an environment variable name", a.TokenEnv)
	}
	if a.StateKeyEnv != "" && !envName().MatchString(a.StateKeyEnv) {
		return at("$.approvals.state_key_env", "approvals.state_key_env %q is not an environment variable name", a.StateKeyEnv)
	}
	if p.Output.MaxBytes < 0 {
		return at("$.output.max_bytes", "output.max_bytes must not be negative")
	}
	for g, n := range p.Output.Tools {
		if _, err := path.Match(g, ""); err != nil || n < 0 {
			return at("$.output.tools", "output.tools %q: a tool glob and a byte count ≥ 0", g)
		}
	}
	if _, err := NewGlobMap("output.tools", p.Output.Tools); err != nil {
		return at("$.output.tools", "%v", err)
	}
	for i, s := range p.Secrets.Patterns {
		if s.Name == "" {
			return at(fmt.Sprintf("$.secrets.patterns[%d]", i), "secrets.patterns[%d]: a pattern needs a name (shown as [REDACTED:name])", i)
		}
		if _, err := regexp.Compile(s.Regexp); err != nil {
			return at(fmt.Sprintf("$.secrets.patterns[%d]", i), "secrets.patterns[%d]: %v", i, err)
		}
	}
	return nil
}

// checkSandbox validates the sandbox section: the level, and the backend
// with the block it needs (a block of another backend is a mistake, not
// ignored).
func checkSandbox(s Sandbox) (where, msg string) {
	switch s.Require {
	case "", "full", "reduced":
	default:
		return "$.sandbox.require", fmt.Sprintf("sandbox.require %q: want full or reduced", s.Require)
	}
	if s.Workspace != "" && (!path.IsAbs(s.Workspace) || path.Clean(s.Workspace) != s.Workspace || s.Workspace == "/") {
		return "$.sandbox.workspace", fmt.Sprintf("sandbox.workspace %q: want a clean absolute folder other than / (e.g. /workspace)", s.Workspace)
	}
	if s.Backend != BackendRunner && s.Runner != nil {
		return "$.sandbox.runner", "sandbox.runner is for backend: runner (sandbox.backend is " + orLocal(s.Backend) + ")"
	}
	if s.Backend != BackendKubernetes && s.Kubernetes != nil {
		return "$.sandbox.kubernetes", "sandbox.kubernetes is for backend: kubernetes (sandbox.backend is " + orLocal(s.Backend) + ")"
	}
	if s.Network != "" && s.Network != "none" {
		return "$.sandbox.network", fmt.Sprintf("sandbox.network %q: want none (the commands of a remote sandbox reach no network)", s.Network)
	}
	switch s.Backend {
	case "", BackendLocal:
		if s.Network != "" {
			return "$.sandbox.network", "sandbox.network is what the commands of a remote sandbox reach: it needs backend runner or kubernetes (the local backend's commands reach the allowed domains)"
		}
		if s.Workspace != "" {
			return "$.sandbox.workspace", "sandbox.workspace is the root inside a remote sandbox: it needs backend runner or kubernetes (the local backend's roots are --root or roots)"
		}
	case BackendRunner:
		r := s.Runner
		if r == nil || len(r.All()) == 0 {
			return "$.sandbox", "sandbox.backend runner needs sandbox.runner.url (or urls), e.g. http://runner.tools.svc:8790"
		}
		seen := map[string]bool{}
		for _, u := range r.All() {
			pu, err := url.Parse(u)
			if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" || pu.User != nil || pu.RawQuery != "" || pu.Fragment != "" || strings.Trim(pu.Path, "/") != "" {
				return "$.sandbox.runner", fmt.Sprintf("sandbox.runner: %q is not a runner's base URL (want http://HOST:PORT, no path)", u)
			}
			if seen[u] {
				return "$.sandbox.runner", fmt.Sprintf("sandbox.runner: %q is named twice", u)
			}
			seen[u] = true
		}
		if r.SecretEnv != "" && !envName().MatchString(r.SecretEnv) {
			return "$.sandbox.runner.secret_env", fmt.Sprintf("sandbox.runner.secret_env %q is not an environment variable name", r.SecretEnv)
		}
		if r.Idle < 0 || r.Max < 0 {
			return "$.sandbox.runner", "sandbox.runner: idle and max must not be negative"
		}
	case BackendKubernetes:
		k := s.Kubernetes
		if k == nil || k.Namespace == "" || (k.Template == "" && k.Image == "") {
			return "$.sandbox", "sandbox.backend kubernetes needs sandbox.kubernetes.namespace and a template or an image"
		}
		if k.SecretEnv != "" && !envName().MatchString(k.SecretEnv) {
			return "$.sandbox.kubernetes.secret_env", fmt.Sprintf("sandbox.kubernetes.secret_env %q is not an environment variable name", k.SecretEnv)
		}
		if k.Idle < 0 || k.Max < 0 {
			return "$.sandbox.kubernetes", "sandbox.kubernetes: idle and max must not be negative"
		}
	default:
		return "$.sandbox.backend", fmt.Sprintf("sandbox.backend %q: want local, runner or kubernetes", s.Backend)
	}
	return "", ""
}

func orLocal(backend string) string {
	if backend == "" {
		return "local, the default"
	}
	return backend
}

func checkRate(r Rate) error {
	if r.PerSecond < 0 || r.Burst < 0 {
		return fmt.Errorf("per_second and burst must not be negative")
	}
	if r.PerSecond > 0 && r.Burst == 0 {
		return fmt.Errorf("a rate needs a burst ≥ 1 (how many calls may come at once)")
	}
	return nil
}

// checkExamples checks a rule against its examples.
func checkExamples(p *Policy, r *rule, ex Examples, allow bool) error {
	for _, m := range ex.Match {
		ok, err := exampleMatches(p, r, m, allow)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("example %q should match, but does not", m)
		}
	}
	for _, m := range ex.NotMatch {
		ok, err := exampleMatches(p, r, m, allow)
		if err != nil {
			return err
		}
		if ok {
			return fmt.Errorf("example %q should not match, but does", m)
		}
	}
	return nil
}

// exampleMatches applies one rule to an example input, the way Decide
// would apply it in its list.
func exampleMatches(p *Policy, r *rule, ex string, allow bool) (bool, error) {
	switch r.kind {
	case specCommand:
		args, _ := json.Marshal(map[string]string{"command": ex})
		def := tool.Definition{Name: "execute_command", InputSchema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)}
		f := &facts{roots: p.roots, def: def, call: tool.Call{Name: def.Name, Args: args}, info: analyzeDefinition(def)}
		if allow {
			return len(allowedBy(f, []*rule{r})) > 0, nil
		}
		return r.catches(f), nil
	case specPath:
		loc := p.roots.locate(ex)
		return r.path.match(&loc, !allow), nil
	case specDomain:
		h, ok := urlHost(ex)
		if !ok {
			return !allow, nil
		}
		return r.dom.match(h), nil
	}
	if r.alias != aliasNone {
		return false, fmt.Errorf("examples need a specifier or a tool-name glob (%s alone matches by what a tool does, not by its name)", r.tool)
	}
	ok, _ := path.Match(r.tool, ex)
	return ok, nil
}
