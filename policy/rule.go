package policy

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/toolgate/toolgate/tool"
)

// Rule grammar: "Tool" or "Tool(specifier)".
//
// Tool is a glob over tool names (path.Match syntax: "github__*",
// "read_*") or one of these aliases:
//
//	Read      tools with path arguments that only read (ReadOnly annotation)
//	Edit      tools with path arguments that change things (Write is the same)
//	Bash      command tools (execute_command, start_process, or a schema property marked x-toolgate-command)
//	WebFetch  tools with a url argument (http_request)
//
// The specifier's kind follows from the rule: "domain:…" is a domain pattern
// (see domainPattern), Bash(…) and execute_command(…) hold a command pattern
// (see cmdPattern), anything else is a path pattern (see pathPattern).
// Read(…), Edit(…) and tool-glob path rules also see the files a command
// redirects to or from, and, for deny and ask rules only, a command's
// arguments (any of them may be a path).

type specKind uint8

const (
	specNone specKind = iota
	specPath
	specCommand
	specDomain
)

type aliasKind uint8

const (
	aliasNone aliasKind = iota
	aliasRead
	aliasEdit
	aliasBash
	aliasWeb
)

var aliases = map[string]aliasKind{"Read": aliasRead, "Edit": aliasEdit, "Write": aliasEdit, "Bash": aliasBash, "WebFetch": aliasWeb}

// rule is a compiled rule.
type rule struct {
	text  string
	tool  string
	alias aliasKind
	kind  specKind
	path  *pathPattern
	cmd   *cmdPattern
	dom   *domainPattern
}

// compileRule parses a rule's text.
func compileRule(text string) (*rule, error) {
	t := strings.TrimSpace(text)
	if t == "" {
		return nil, fmt.Errorf("empty rule")
	}
	r := &rule{text: text, tool: t}
	if i := strings.IndexByte(t, '('); i >= 0 {
		if !strings.HasSuffix(t, ")") {
			return nil, fmt.Errorf("rule %q: a specifier must end with \")\", e.g. Bash(npm run test:*)", text)
		}
		r.tool = strings.TrimSpace(t[:i])
		spec := strings.TrimSpace(t[i+1 : len(t)-1])
		if spec == "" {
			return nil, fmt.Errorf("rule %q: empty specifier (write the tool alone to match every call)", text)
		}
		var err error
		switch {
		case strings.HasPrefix(spec, "domain:"):
			r.kind = specDomain
			r.dom, err = parseDomainPattern(spec)
		case r.tool == "Bash" || r.tool == "execute_command":
			r.kind = specCommand
			r.cmd, err = parseCmdPattern(spec)
		default:
			r.kind = specPath
			r.path, err = parsePathPattern(spec)
		}
		if err != nil {
			return nil, fmt.Errorf("rule %q: %w", text, err)
		}
	} else if strings.HasSuffix(t, ")") {
		return nil, fmt.Errorf("rule %q: unbalanced parentheses", text)
	}
	if r.tool == "" {
		return nil, fmt.Errorf("rule %q: no tool name before the specifier", text)
	}
	r.alias = aliases[r.tool]
	if r.alias == aliasNone {
		if strings.ContainsAny(r.tool, " \t\n()") {
			return nil, fmt.Errorf("rule %q: %q is not a tool name or glob", text, r.tool)
		}
		if _, err := path.Match(r.tool, ""); err != nil {
			return nil, fmt.Errorf("rule %q: %w", text, err)
		}
	}
	if r.kind == specDomain && r.alias != aliasNone && r.alias != aliasWeb {
		return nil, fmt.Errorf("rule %q: domain: specifiers go with WebFetch or a tool name", text)
	}
	return r, nil
}

// toolInfo is what the policy learns from a tool's definition: which
// arguments name paths, commands and URLs.
type toolInfo struct {
	schema  string
	paths   []string // properties holding a path (string) or paths (array of strings)
	patches []string // properties holding a patch whose headers name files
	command string   // property holding a shell command line
	argv    string   // property holding an argument vector
	env     string   // property holding extra environment variables of a command (an object)
	urls    []string

	// applies caches, per rule list, the rules that apply to this tool
	// (appliesTo depends only on the rule and the definition), so that a
	// call does not walk every rule of a long list (the protected paths)
	// that cannot apply to it.
	applies boundedMap // the list's first rule → *ruleSet (whose key is checked)
}

// appliesKey names a rule list (by its first element and length: lists are
// never changed once compiled) and what else appliesTo reads.
type appliesKey struct {
	first    *rule
	n        int
	name     string
	readOnly bool
}

// boundedMap is a sync.Map of at most maxCached entries: one more empties
// it first (a policy reloaded many times starts its caches again). Only
// Load and add reach the map, so nothing stores past the bound.
type boundedMap struct {
	m sync.Map
	n atomic.Int32
}

const maxCached = 64

// Load returns the value stored under k, if any.
func (b *boundedMap) Load(k any) (any, bool) { return b.m.Load(k) }

// add stores v under k, emptying the map first when it is full.
func (b *boundedMap) add(k, v any) {
	if b.n.Add(1) > maxCached {
		b.m.Clear()
		b.n.Store(1)
	}
	b.m.Store(k, v)
}

// applicable returns the rules of l that apply to f's tool, in order.
func applicable(f *facts, l []*rule) *ruleSet {
	if len(l) == 0 {
		return &noRules
	}
	// Looked up by the first rule alone (a pointer hashes fast; the whole
	// key, with its string, cost ~0.4k instructions a look-up), then the
	// whole key compared.
	k := appliesKey{first: l[0], n: len(l), name: f.def.Name, readOnly: f.def.Annotations.ReadOnly}
	if v, ok := f.info.applies.Load(k.first); ok {
		if rs := v.(*ruleSet); rs.key == k {
			return rs
		}
	}
	var out []*rule
	for _, r := range l {
		if r.appliesTo(f) {
			out = append(out, r)
		}
	}
	rs := newRuleSet(out)
	rs.key = k
	f.info.applies.add(k.first, rs)
	return rs
}

var noRules ruleSet

func (ti *toolInfo) isCommand() bool { return ti.command != "" || ti.argv != "" }
func (ti *toolInfo) hasPaths() bool  { return len(ti.paths) > 0 || len(ti.patches) > 0 }

// pathNames are the parameter names taken to hold paths when the schema
// says nothing else (x-toolgate-path: false opts a parameter out).
var pathNames = map[string]bool{
	"path": true, "paths": true, "file": true, "files": true, "file_path": true, "filepath": true, "filename": true,
	"source": true, "destination": true, "src": true, "dst": true, "dest": true, "target_file": true,
	"dir": true, "directory": true, "cwd": true, "workdir": true, "working_directory": true,
}

func analyzeDefinition(def tool.Definition) *toolInfo {
	ti := &toolInfo{schema: string(def.InputSchema)}
	var s struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	if json.Unmarshal(def.InputSchema, &s) != nil {
		return ti
	}
	// start_process runs its command as execute_command does: the same
	// rules hold for both.
	commandTool := def.Name == "execute_command" || def.Name == "start_process"
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	slices.Sort(names) // a stable order for messages and suggested rules
	for _, name := range names {
		prop := s.Properties[name]
		typ, _ := prop["type"].(string)
		hint := func(k string) (bool, bool) { v, ok := prop[k].(bool); return v, ok }
		if v, ok := hint("x-toolgate-command"); ok && v || commandTool && name == "command" && typ == "string" {
			if typ == "array" {
				ti.argv = name
			} else {
				ti.command = name
			}
			continue
		}
		if commandTool && name == "argv" && typ == "array" {
			ti.argv = name
			continue
		}
		if v, ok := hint("x-toolgate-env"); ok && v || commandTool && name == "env" && typ == "object" {
			ti.env = name
			continue
		}
		if v, ok := hint("x-toolgate-url"); ok && v || !ok && name == "url" {
			ti.urls = append(ti.urls, name)
			continue
		}
		if v, ok := hint("x-toolgate-patch"); ok && v || !ok && name == "patch" && typ == "string" {
			ti.patches = append(ti.patches, name)
			continue
		}
		if v, ok := hint("x-toolgate-path"); ok && v || !ok && pathNames[name] && (typ == "" || typ == "string" || typ == "array") {
			ti.paths = append(ti.paths, name)
		}
	}
	return ti
}

// facts are what one call touches, computed once per decision and only as
// far as a rule needs them.
type facts struct {
	roots roots
	def   tool.Definition
	call  tool.Call
	info  *toolInfo

	argsDone bool
	args     map[string]any
	argsErr  error

	pathsDone bool
	paths     []pathUse
	locs      []location

	shellDone bool
	shell     *shellFacts

	urlsDone bool
	hosts    []string
	badURL   bool
}

func (f *facts) arguments() (map[string]any, error) {
	if !f.argsDone {
		f.argsDone = true
		if len(f.call.Args) > 0 {
			var args map[string]any // not &f.args: that would move every facts to the heap
			f.argsErr = json.Unmarshal(f.call.Args, &args)
			f.args = args
		}
	}
	return f.args, f.argsErr
}

// command returns what analysing the call's command found (nil when the
// tool runs no command).
func (f *facts) command() *shellFacts {
	if f.shellDone {
		return f.shell
	}
	f.shellDone = true
	if !f.info.isCommand() {
		return nil
	}
	args, err := f.arguments()
	if err != nil {
		f.shell = &shellFacts{err: fmt.Errorf("the arguments are not a JSON object: %w", err)}
		return f.shell
	}
	sh := &shellFacts{}
	found := false
	if v, ok := args[f.info.command]; ok && f.info.command != "" {
		s, ok := v.(string)
		if !ok {
			sh.err = fmt.Errorf("%s is not a string", f.info.command)
		} else {
			sh.merge(analyzeShell(s), false)
			found = true
		}
	}
	if v, ok := args[f.info.argv]; ok && f.info.argv != "" {
		list, ok := stringList(v)
		if !ok {
			sh.err = fmt.Errorf("%s is not an array of strings", f.info.argv)
		} else {
			sh.merge(analyzeArgv(list), false)
			found = true
		}
	}
	if !found && sh.err == nil {
		sh.err = fmt.Errorf("the call names no command")
	}
	if v, ok := args[f.info.env]; ok && f.info.env != "" && v != nil {
		env, ok := v.(map[string]any)
		if !ok {
			sh.err = fmt.Errorf("%s is not an object", f.info.env)
		}
		// the variables apply to every command the line runs
		for i := range sh.parts {
			for name := range env {
				sh.parts[i].assigns = append(sh.parts[i].assigns, name)
			}
		}
	}
	f.shell = sh
	return sh
}

// pathUses returns the paths the call touches, with their locations.
func (f *facts) pathUses() ([]pathUse, []location) {
	if f.pathsDone {
		return f.paths, f.locs
	}
	f.pathsDone = true
	acc := accWrite
	if f.def.Annotations.ReadOnly {
		acc = accRead
	}
	// Gathered on the stack, then kept as they are counted: one allocation
	// for a call with one path (most that have any), not one for the path
	// and one for its location.
	var room [4]pathUse
	paths := room[:0]
	if args, err := f.arguments(); err == nil {
		for _, name := range f.info.paths {
			v, ok := args[name]
			if !ok {
				continue
			}
			if s, ok := v.(string); ok {
				paths = append(paths, pathUse{p: s, acc: acc, origin: name})
			} else if list, ok := stringList(v); ok {
				for _, s := range list {
					paths = append(paths, pathUse{p: s, acc: acc, origin: name})
				}
			}
		}
		for _, name := range f.info.patches {
			if s, ok := args[name].(string); ok {
				for _, p := range patchPaths(s) {
					paths = append(paths, pathUse{p: p, acc: accWrite, origin: name})
				}
			}
		}
	}
	if sh := f.command(); sh != nil {
		paths = append(paths, sh.paths...)
	}
	switch len(paths) {
	case 0:
	case 1:
		one := &onePath{path: [1]pathUse{paths[0]}}
		f.paths, f.locs = one.path[:], one.loc[:]
	default:
		f.paths, f.locs = slices.Clone(paths), make([]location, len(paths))
	}
	for i, u := range f.paths {
		f.locs[i] = f.roots.locate(u.p)
	}
	return f.paths, f.locs
}

// onePath is the path of a call that has one, and its location.
type onePath struct {
	path [1]pathUse
	loc  [1]location
}

// urlHosts returns the hosts the call's url arguments reach; bad is true
// when one of them cannot be judged.
func (f *facts) urlHosts() (hosts []string, bad bool) {
	if f.urlsDone {
		return f.hosts, f.badURL
	}
	f.urlsDone = true
	args, err := f.arguments()
	if err != nil {
		f.badURL = len(f.info.urls) > 0
		return nil, f.badURL
	}
	for _, name := range f.info.urls {
		v, ok := args[name]
		if !ok {
			continue
		}
		s, ok := v.(string)
		if !ok {
			f.badURL = true
			continue
		}
		h, ok := urlHost(s)
		if !ok {
			f.badURL = true
			continue
		}
		f.hosts = append(f.hosts, h)
	}
	return f.hosts, f.badURL
}

func stringList(v any) ([]string, bool) {
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// appliesTo reports whether the rule concerns calls of this tool at all.
func (r *rule) appliesTo(f *facts) bool {
	switch r.kind {
	case specPath:
		if !f.info.hasPaths() && !f.info.isCommand() {
			return false
		}
	case specCommand:
		if !f.info.isCommand() {
			return false
		}
	case specDomain:
		if len(f.info.urls) == 0 {
			return false
		}
	}
	switch r.alias {
	case aliasBash:
		return f.info.isCommand()
	case aliasWeb:
		return len(f.info.urls) > 0
	case aliasRead, aliasEdit:
		if f.info.isCommand() {
			return r.kind == specPath
		}
		if !f.info.hasPaths() {
			return false
		}
		return f.def.Annotations.ReadOnly == (r.alias == aliasRead)
	}
	ok, _ := path.Match(r.tool, f.def.Name)
	return ok
}

// accessOf is the access a path must be used with for the rule to see it.
func (r *rule) accessOf() access {
	switch r.alias {
	case aliasRead:
		return accRead
	case aliasEdit:
		return accWrite
	}
	return accRead | accWrite
}

// catches is the deny and ask reading of a rule: does any part of the call
// match? Facts that cannot be judged (a bad URL) count as a match.
func (r *rule) catches(f *facts) bool {
	return r.appliesTo(f) && r.caught(f)
}

// caught is catches for a rule known to apply to the call (appliesTo).
func (r *rule) caught(f *facts) bool {
	switch r.kind {
	case specNone:
		return true
	case specCommand:
		sh := f.command()
		if sh == nil {
			return false
		}
		for _, p := range sh.parts {
			if r.cmd.catches(p) {
				return true
			}
		}
	case specPath:
		uses, locs := f.pathUses()
		acc := r.accessOf()
		for i := range uses {
			if uses[i].acc&acc != 0 && r.path.match(&locs[i], true) {
				return true
			}
		}
	case specDomain:
		hosts, bad := f.urlHosts()
		if bad {
			return true
		}
		for _, h := range hosts {
			if r.dom.match(h) {
				return true
			}
		}
	}
	return false
}

// firstCatch returns the first rule of the lists that catches the call.
func firstCatch(f *facts, lists ...[]*rule) *rule {
	for _, l := range lists {
		rs := applicable(f, l)
		rules := rs.rules
		if rs.lits != nil {
			if _, locs := f.pathUses(); rs.pathsOut(locs) {
				rules = rs.others // no path rule can catch the call
			}
		}
		for _, r := range rules {
			if r.caught(f) {
				return r
			}
		}
	}
	return nil
}

// allowedBy is the allow reading of the lists: a bare rule allows every call
// of its tool; otherwise every part of the call (each command of a command
// line, each path, each URL) must be allowed by some rule. It returns the
// rules that did.
func allowedBy(f *facts, lists ...[]*rule) []*rule {
	var specRules []*rule
	for _, l := range lists {
		for _, r := range l {
			if !r.appliesTo(f) {
				continue
			}
			if r.kind == specNone {
				return []*rule{r}
			}
			specRules = append(specRules, r)
		}
	}
	if len(specRules) == 0 {
		return nil
	}
	var used []*rule
	use := func(r *rule) {
		for _, u := range used {
			if u == r {
				return
			}
		}
		used = append(used, r)
	}
	items := 0
	// cover records the first rule that allows one item of the call;
	// false when none does.
	cover := func(allows func(*rule) bool) bool {
		items++
		for _, r := range specRules {
			if allows(r) {
				use(r)
				return true
			}
		}
		return false
	}
	if f.info.isCommand() {
		sh := f.command()
		if sh == nil || sh.err != nil || len(sh.opaque) > 0 {
			return nil
		}
		for _, p := range sh.parts {
			if len(p.words) == 0 {
				// a bare assignment: harmless unless it changes how programs run
				for _, a := range p.assigns {
					if isDangerousEnv(a) {
						return nil
					}
				}
				continue
			}
			if !cover(func(r *rule) bool { return r.kind == specCommand && r.cmd.allows(p) }) {
				return nil
			}
		}
		if items == 0 {
			return nil
		}
		return used
	}
	uses, locs := f.pathUses()
	for i, u := range uses {
		if u.weak {
			continue
		}
		if !cover(func(r *rule) bool {
			return r.kind == specPath && u.acc&r.accessOf() != 0 && r.path.match(&locs[i], false)
		}) {
			return nil
		}
	}
	hosts, bad := f.urlHosts()
	if bad {
		return nil
	}
	for _, h := range hosts {
		if !cover(func(r *rule) bool { return r.kind == specDomain && r.dom.match(h) }) {
			return nil
		}
	}
	if items == 0 {
		return nil
	}
	return used
}

// guardedBy returns the first guarded rule that catches a path the call
// changes without an allow rule naming it (a rule with a path pattern that
// matches the path, compared exactly as allow rules are), or nil. Command
// tools are not asked: the sandbox keeps guarded paths read-only instead.
func guardedBy(f *facts, guarded []*rule, allows ...[]*rule) *rule {
	if len(guarded) == 0 || f.info.isCommand() || !f.info.hasPaths() {
		return nil
	}
	rs := applicable(f, guarded)
	if len(rs.rules) == 0 {
		return nil
	}
	uses, locs := f.pathUses()
	for i, u := range uses {
		if u.acc&accWrite == 0 || rs.pathsOut(locs[i:i+1]) {
			continue
		}
		for _, g := range rs.rules {
			if g.kind == specPath && g.path.match(&locs[i], true) {
				if !namedBy(f, u, &locs[i], allows) {
					return g
				}
				break
			}
		}
	}
	return nil
}

// namedBy reports whether an allow rule of the lists with a path pattern
// matches the path u at loc.
func namedBy(f *facts, u pathUse, loc *location, lists [][]*rule) bool {
	for _, l := range lists {
		for _, r := range l {
			if r.kind == specPath && u.acc&r.accessOf() != 0 && r.appliesTo(f) && r.path.match(loc, false) {
				return true
			}
		}
	}
	return false
}

// PathParams names the parameters of def that path rules read as paths,
// and those holding patches, whose file headers name paths (PatchPaths):
// what a caller that forwards a call must read as the policy did.
func PathParams(def tool.Definition) (paths, patches []string) {
	ti := analyzeDefinition(def)
	return ti.paths, ti.patches
}

// PatchPaths returns the paths the file headers of patch name.
func PatchPaths(patch string) []string { return patchPaths(patch) }
