package policy

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/toolgate/toolgate/tool"
)

// Effect is what a decision lets happen.
type Effect string

const (
	Allow Effect = "allow"
	Ask   Effect = "ask"
	Deny  Effect = "deny"
)

// Mode is the session-wide stance.
type Mode string

const (
	ModeDefault     Mode = "default"      // levels decide: 0-1 run, 2-3 ask
	ModeReadOnly    Mode = "read-only"    // only read-only tools run (plan mode)
	ModePlan        Mode = "plan"         // another name for read-only
	ModeAcceptEdits Mode = "accept-edits" // level 0-1 run without asking, even where rules say ask
	ModeBypass      Mode = "bypass"       // everything runs except what a deny rule or the level cap forbids
)

// Valid reports whether m is a known mode.
func (m Mode) Valid() bool {
	switch m {
	case ModeDefault, ModeReadOnly, ModePlan, ModeAcceptEdits, ModeBypass:
		return true
	}
	return false
}

// canonical folds aliases (plan is read-only; "" is default).
func (m Mode) canonical() Mode {
	switch m {
	case ModePlan:
		return ModeReadOnly
	case "":
		return ModeDefault
	}
	return m
}

// Treatment is what happens to a call of a given level when no rule
// decides it.
type Treatment string

const (
	TreatAuto    Treatment = "auto"    // runs
	TreatLog     Treatment = "log"     // runs; the decision asks to be logged (Decision.Log)
	TreatAsk     Treatment = "ask"     // a human approves first
	TreatConfirm Treatment = "confirm" // a human approves with an explicit second confirmation, unless the principal's role is admin
	TreatDeny    Treatment = "deny"    // never runs
)

// Valid reports whether t is a known treatment.
func (t Treatment) Valid() bool {
	switch t {
	case TreatAuto, TreatLog, TreatAsk, TreatConfirm, TreatDeny:
		return true
	}
	return false
}

// DefaultTreatment is the treatment of a level when the policy says
// nothing: 0 auto, 1 auto and logged, 2 ask, 3 ask with confirmation.
func DefaultTreatment(l tool.Level) Treatment {
	switch l {
	case tool.LevelRead:
		return TreatAuto
	case tool.LevelWrite:
		return TreatLog
	case tool.LevelMedium:
		return TreatAsk
	case tool.LevelHigh:
		return TreatConfirm
	}
	return TreatDeny
}

// Role is a set of permissions that principals share.
type Role struct {
	MaxLevel *tool.Level // nil: the policy's MaxLevel
	Admin    bool        // level-3 calls need no second confirmation
	Deny     []string    // rules added to the policy's own lists for this role
	Ask      []string
	Allow    []string
}

// Principal is a caller the policy knows by name (tool.Call.Principal).
type Principal struct {
	Role     string      `yaml:"role,omitempty" json:"role,omitempty"`
	MaxLevel *tool.Level `yaml:"max_level,omitempty" json:"max_level,omitempty"` // nil: the role's
}

// Policy decides calls. Build one with Default, Parse or Load, adjust the
// exported fields if needed, then share it: Decide is safe for concurrent
// use as long as no field changes any more (to change rules while calls
// run, build a new Policy and swap it in).
type Policy struct {
	Mode     Mode
	MaxLevel tool.Level // calls to tools above this level are denied

	// Rules in the Tool(specifier) grammar (see rule.go): deny is checked
	// first, then ask, then allow; the first match wins. Default fills
	// Deny with DefaultDeny.
	Deny, Ask, Allow []string
	// Guarded are path rules that ask before a tool changes what they
	// match, unless every such path is also matched by an allow rule with
	// a path pattern (a bare allow rule, a tool name alone, does not
	// count); checked after the ask rules and before the allow rules, also
	// in accept-edits mode, and not for command tools (the command sandbox
	// keeps these paths read-only instead). Default fills it with the CI
	// definitions (DefaultGuarded, CIPaths).
	Guarded []string
	// Reasons gives a rule (by its text) the sentence shown to the model
	// and the audit log when it decides a call.
	Reasons map[string]string

	// Roots are the folders relative paths resolve against (the first
	// one) and that anchored path patterns are relative to.
	Roots []string

	// Levels says what happens to each level when no rule decides; an
	// empty entry means DefaultTreatment.
	Levels [4]Treatment

	Roles       map[string]Role
	Principals  map[string]Principal
	DefaultRole string // the role of calls without a principal ("" none)

	Limits    Limits
	Approvals Approvals
	Output    Output
	Secrets   Secrets
	Files     Files
	Processes Processes
	State     State     // where replicas share limits, loops and results
	HTTP      HTTP      // how serve --http and proxy --http answer
	Trust     Trust     // what the gateway does with upstream tools it does not trust yet
	Console   Console   // who may use the web console (serve --http, proxy --http)
	Selection Selection // how tool_search ranks: learning from use
	Sandbox   Sandbox   // how strong the command sandbox must be
	// Auth is how HTTP callers are authenticated (nil: they are not); see
	// package auth.
	Auth *Auth

	// Source is the file the policy was loaded from ("" when built in
	// code): where an "always" approval is written.
	Source string

	mu    sync.Mutex
	cur   atomic.Pointer[compiled]
	infos sync.Map // tool name → *toolInfo
	roots roots    // set by parse for checking examples
}

// compiled holds the rules in compiled form, and which lists they came
// from: replacing Deny, Ask, Allow or Roots makes the next decision
// compile again (changing a role's lists in place does not: replace the
// Roles map before the policy's first use).
type compiled struct {
	src              [5]listID
	deny, ask, allow []*rule
	guarded          []*rule
	roles            map[string]compiledRole
	roots            roots
	err              error
}

// listID identifies a slice by its first element and length.
type listID struct {
	first *string
	n     int
}

func idOf(l []string) listID {
	if len(l) == 0 {
		return listID{}
	}
	return listID{&l[0], len(l)}
}

func (p *Policy) ids() [5]listID {
	return [5]listID{idOf(p.Deny), idOf(p.Ask), idOf(p.Allow), idOf(p.Roots), idOf(p.Guarded)}
}

type compiledRole struct {
	deny, ask, allow []*rule
}

// Default is the policy used when none is given: default mode, every level
// reachable, the protected paths of DefaultDeny denied, the CI definitions
// guarded (DefaultGuarded).
func Default() *Policy {
	p := &Policy{Mode: ModeDefault, MaxLevel: tool.LevelHigh, Reasons: map[string]string{}, Guarded: DefaultGuarded()}
	for _, r := range DefaultDeny() {
		p.Deny = append(p.Deny, r.Rule)
		p.Reasons[r.Rule] = r.Reason
	}
	ciReasons(p.Reasons)
	return p
}

// Check reports the problems in p: an unknown mode or treatment, an invalid
// level, a malformed rule, a principal with an unknown role.
func (p *Policy) Check() error {
	var errs []error
	if !p.Mode.Valid() && p.Mode != "" {
		errs = append(errs, fmt.Errorf("policy: unknown mode %q (want default, read-only (or plan), accept-edits or bypass)", p.Mode))
	}
	if !p.MaxLevel.Valid() {
		errs = append(errs, fmt.Errorf("policy: max_level %d is not a level (0-3)", p.MaxLevel))
	}
	for lv, t := range p.Levels {
		if t != "" && !t.Valid() {
			errs = append(errs, fmt.Errorf("policy: level %d: unknown treatment %q (want auto, log, ask, confirm or deny)", lv, t))
		}
	}
	for name, r := range p.Roles {
		if r.MaxLevel != nil && !r.MaxLevel.Valid() {
			errs = append(errs, fmt.Errorf("policy: role %q: max_level %d is not a level (0-3)", name, *r.MaxLevel))
		}
	}
	for name, pr := range p.Principals {
		if _, ok := p.Roles[pr.Role]; !ok && pr.Role != "" {
			errs = append(errs, fmt.Errorf("policy: principal %q has role %q, which the policy does not define", name, pr.Role))
		}
		if pr.MaxLevel != nil && !pr.MaxLevel.Valid() {
			errs = append(errs, fmt.Errorf("policy: principal %q: max_level %d is not a level (0-3)", name, *pr.MaxLevel))
		}
	}
	if _, ok := p.Roles[p.DefaultRole]; !ok && p.DefaultRole != "" {
		errs = append(errs, fmt.Errorf("policy: default_role %q is not a role the policy defines", p.DefaultRole))
	}
	if _, err := compileAll(p); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func compileList(list []string, errs *[]error, where string) []*rule {
	out := make([]*rule, 0, len(list))
	for _, text := range list {
		r, err := compileRule(text)
		if err != nil {
			*errs = append(*errs, fmt.Errorf("policy: %s: %w", where, err))
			continue
		}
		out = append(out, r)
	}
	return out
}

func compileAll(p *Policy) (*compiled, error) {
	var errs []error
	c := &compiled{
		deny:    compileList(p.Deny, &errs, "deny"),
		ask:     compileList(p.Ask, &errs, "ask"),
		allow:   compileList(p.Allow, &errs, "allow"),
		guarded: compileList(p.Guarded, &errs, "guarded"),
		roles:   map[string]compiledRole{},
	}
	for name, r := range p.Roles {
		where := "role " + name
		c.roles[name] = compiledRole{
			deny:  compileList(r.Deny, &errs, where+" deny"),
			ask:   compileList(r.Ask, &errs, where+" ask"),
			allow: compileList(r.Allow, &errs, where+" allow"),
		}
	}
	c.err = errors.Join(errs...)
	return c, c.err
}

// prepare returns the compiled rules, compiling them on first use and
// again when a list was replaced.
func (p *Policy) prepare() *compiled {
	ids := p.ids()
	if c := p.cur.Load(); c != nil && c.src == ids {
		return c
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.cur.Load(); c != nil && c.src == ids {
		return c
	}
	c, _ := compileAll(p)
	c.src, c.roots = ids, newRoots(p.Roots)
	p.cur.Store(c)
	return c
}

func (p *Policy) info(def tool.Definition) *toolInfo {
	if v, ok := p.infos.Load(def.Name); ok {
		ti := v.(*toolInfo)
		if ti.schema == string(def.InputSchema) {
			return ti
		}
	}
	ti := analyzeDefinition(def)
	p.infos.Store(def.Name, ti)
	return ti
}

// caller is what the policy makes of a call's principal.
type caller struct {
	role     string // "" none
	maxLevel tool.Level
}

// who resolves the caller's role: an authenticated caller's first
// credential role that the policy defines, else the principal's entry in
// Principals, else DefaultRole. A principal missing from Principals is
// refused (false) unless a credential vouches for it.
func (p *Policy) who(call tool.Call) (caller, bool) {
	w := caller{role: p.DefaultRole, maxLevel: p.MaxLevel}
	authed := authenticated(call)
	if call.Principal != "" && len(p.Principals) > 0 {
		pr, ok := p.Principals[call.Principal]
		switch {
		case ok:
			w.role = pr.Role
			if pr.MaxLevel != nil && *pr.MaxLevel < w.maxLevel {
				w.maxLevel = *pr.MaxLevel
			}
		case !authed:
			return w, false
		}
	}
	if authed {
		for _, r := range call.Auth.Roles {
			if _, ok := p.Roles[r]; ok {
				w.role = r
				break
			}
		}
	}
	if r, ok := p.Roles[w.role]; ok && r.MaxLevel != nil && *r.MaxLevel < w.maxLevel {
		w.maxLevel = *r.MaxLevel
	}
	return w, true
}

// authenticated reports whether a credential vouches for call's principal.
func authenticated(call tool.Call) bool {
	return call.Auth != nil && (call.Auth.Kind == tool.CredentialJWT || call.Auth.Kind == tool.CredentialAPIKey)
}

// Hides reports whether call's caller may never call the tool def
// describes, whatever the arguments: the tool is above the caller's level,
// a deny rule (the policy's or the caller's role's) names the whole tool,
// the mode is read-only and the tool can change things, or the policy does
// not know the principal. Such a tool is left out of what the caller is
// shown; it is not the whole check (Decide is).
func (p *Policy) Hides(def tool.Definition, call tool.Call) bool {
	c := p.prepare()
	if c.err != nil {
		return true
	}
	w, ok := p.who(call)
	if !ok || !def.Level.Valid() || def.Level > w.maxLevel {
		return true
	}
	if p.Mode.canonical() == ModeReadOnly && !(def.Annotations.ReadOnly && def.Level == tool.LevelRead) {
		return true
	}
	f := &facts{roots: c.roots, def: def, call: call, info: p.info(def)}
	for _, l := range [][]*rule{c.deny, c.roles[w.role].deny} {
		for _, r := range l {
			if r.kind == specNone && r.catches(f) {
				return true
			}
		}
	}
	return false
}

// Decision is the outcome of Decide.
type Decision struct {
	Effect  Effect
	Rule    string // the rule that matched ("deny:Bash(rm:*)"), or the reason ("level:2", "mode:read-only")
	Mode    Mode
	Reason  string // a sentence for the model and the audit log
	Confirm bool   // an Ask that needs an explicit second confirmation (level 3)
	// ToolAsked marks an Ask that the tool itself raised about this call
	// (tool.NeedsApproval: a dangerous command), not a rule or a level.
	ToolAsked bool
	Log       bool // the level's treatment is "log": an allowed call worth a line in the log
	Level     tool.Level
	Role      string // the role the call's principal has ("" none)
}

// Decide applies p to a call of the tool def describes. It never fails: a
// policy whose rules do not compile denies every call, and a call whose
// arguments cannot be judged is not allowed by a rule.
func (p *Policy) Decide(def tool.Definition, call tool.Call) Decision {
	return p.DecideParsed(def, call, nil)
}

// DecideParsed is Decide for a caller that has already parsed call.Args
// into args (exactly those bytes, as the engine does): the policy then
// judges args instead of parsing the arguments again. Nil args: parse.
func (p *Policy) DecideParsed(def tool.Definition, call tool.Call, args map[string]any) Decision {
	c := p.prepare()
	mode := p.Mode.canonical()
	d := Decision{Mode: mode, Level: def.Level}
	deny := func(rule, reason string) Decision {
		d.Effect, d.Rule, d.Reason = Deny, rule, reason
		return d
	}
	if c.err != nil {
		return deny("policy:invalid", "the policy has errors, so every call is refused: "+c.err.Error())
	}

	// who is calling
	w, ok := p.who(call)
	if !ok {
		return deny("principal:unknown", fmt.Sprintf("the policy does not know the principal %q", call.Principal))
	}
	maxLevel := w.maxLevel
	var role compiledRole
	admin := false
	if w.role != "" {
		role, admin, d.Role = c.roles[w.role], p.Roles[w.role].Admin, w.role
	}
	if !def.Level.Valid() {
		return deny("level:invalid", fmt.Sprintf("%s declares level %d, which is not a level (0-3)", def.Name, def.Level))
	}
	if def.Level > maxLevel {
		return deny(fmt.Sprintf("max_level:%d", maxLevel), fmt.Sprintf("%s is a level-%d tool and this policy allows at most level %d", def.Name, def.Level, maxLevel))
	}
	if p.Auth != nil && authenticated(call) {
		if sc := p.Auth.missingScope(def.Name, call.Auth); sc != "" {
			return deny("scope:"+sc, fmt.Sprintf("%s needs the scope %q, which the caller's token does not grant; the user must sign in again asking for it", def.Name, sc))
		}
	}

	f := &facts{roots: c.roots, def: def, call: call, info: p.info(def)}
	if args != nil {
		f.args, f.argsDone = args, true
	}
	if r := firstCatch(f, c.deny, role.deny); r != nil {
		why := p.reason(r, fmt.Sprintf("the policy denies this call of %s (rule %s)", def.Name, r.text))
		if sh := f.command(); r.kind == specCommand && sh != nil && len(sh.opaque) > 0 {
			why += "; the command contains parts known only when it runs (" + strings.Join(sh.opaque, "; ") + "), so it cannot be shown to stay clear of this rule"
		}
		return deny("deny:"+r.text, why)
	}
	sh := f.command()
	if sh != nil && sh.err != nil {
		return deny("command:unparsable", fmt.Sprintf("the command cannot be checked because it is not valid shell (%v); fix its syntax", sh.err))
	}
	opaque := sh != nil && len(sh.opaque) > 0
	switch mode {
	case ModeReadOnly:
		if !(def.Annotations.ReadOnly && def.Level == tool.LevelRead) {
			return deny("mode:read-only", fmt.Sprintf("the session is in read-only mode and %s can change things", def.Name))
		}
	case ModeBypass:
		if opaque {
			return deny("command:opaque", "bypass mode cannot check this command against the deny rules: it contains "+strings.Join(sh.opaque, "; "))
		}
		d.Effect, d.Rule, d.Reason = Allow, "mode:bypass", "bypass mode allows every call that no deny rule forbids"
		return d
	}
	treat := p.treatment(def.Level)
	if mode == ModeAcceptEdits && def.Level <= tool.LevelWrite && (treat == TreatAsk || treat == TreatConfirm) {
		treat = TreatAuto
	}
	if r := firstCatch(f, c.ask, role.ask); r != nil && !(mode == ModeAcceptEdits && def.Level <= tool.LevelWrite) {
		d.Effect, d.Rule = Ask, "ask:"+r.text
		d.Reason = p.reason(r, fmt.Sprintf("the policy asks before this call of %s runs (rule %s)", def.Name, r.text))
		d.Confirm = treat == TreatConfirm && !admin
		return d
	}
	if r := guardedBy(f, c.guarded, c.allow, role.allow); r != nil {
		d.Effect, d.Rule = Ask, "ask:"+r.text
		d.Reason = p.reason(r, fmt.Sprintf("the policy asks before %s changes this path (rule %s)", def.Name, r.text))
		d.Confirm = treat == TreatConfirm && !admin
		return d
	}
	if !opaque {
		if rs := allowedBy(f, c.allow, role.allow); len(rs) > 0 {
			names := make([]string, len(rs))
			for i, r := range rs {
				names[i] = r.text
			}
			d.Effect, d.Rule = Allow, "allow:"+strings.Join(names, " + ")
			d.Reason = p.reason(rs[0], fmt.Sprintf("the policy allows this call of %s (rule %s)", def.Name, strings.Join(names, " + ")))
			return d
		}
	}
	switch treat {
	case TreatAuto, TreatLog:
		if opaque {
			d.Effect, d.Rule = Ask, "command:opaque"
			d.Reason = "the command cannot be fully checked before it runs: it contains " + strings.Join(sh.opaque, "; ")
			return d
		}
		d.Effect, d.Log = Allow, treat == TreatLog
	case TreatAsk:
		d.Effect = Ask
	case TreatConfirm:
		d.Effect, d.Confirm = Ask, !admin
	default:
		d.Effect = Deny
	}
	d.Rule, d.Reason = levelRules[def.Level][treatIndex(treat)], levelReasons[treatIndex(treat)]
	if opaque && d.Effect == Ask {
		d.Reason += "; the command contains " + strings.Join(sh.opaque, "; ")
	}
	return d
}

func (p *Policy) reason(r *rule, fallback string) string {
	if s := p.Reasons[r.text]; s != "" {
		return s + " (rule " + r.text + ")"
	}
	return fallback
}

func (p *Policy) treatment(l tool.Level) Treatment {
	if !l.Valid() {
		return TreatDeny
	}
	if t := p.Levels[l]; t != "" {
		return t
	}
	return DefaultTreatment(l)
}

var treatOrder = [...]Treatment{TreatAuto, TreatLog, TreatAsk, TreatConfirm, TreatDeny}

func treatIndex(t Treatment) int {
	for i, x := range treatOrder {
		if x == t {
			return i
		}
	}
	return len(treatOrder) - 1
}

// levelRules and levelReasons are built once: Decide is on every call's path.
var levelRules = func() (out [4][5]string) {
	for lv := range out {
		for i, t := range treatOrder {
			out[lv][i] = fmt.Sprintf("level:%d", lv)
			if t != DefaultTreatment(tool.Level(lv)) {
				out[lv][i] += ":" + string(t)
			}
		}
	}
	return out
}()

var levelReasons = [5]string{
	"tools of this level run without asking",
	"tools of this level run without asking, and the call is logged",
	"tools of this level need a human's approval",
	"tools of this level need a human's approval and an explicit confirmation",
	"the policy never runs tools of this level",
}
