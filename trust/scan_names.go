package trust

import (
	"encoding/json"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// scanState is what the rules of one tool share: the tool's own names and
// the index of the other tools and servers the model sees.
type scanState struct {
	self   string          // the tool's name, folded, lower case
	params map[string]bool // its parameters' names, lower case
	server string
	idx    *index
	budget int // bytes of text the sentence rules may still read
}

// index is the context of a scan, worked out once for all its tools.
type index struct {
	names        []nameInfo
	folded       map[string]map[string]bool // folded lower-case name → its servers
	styles       map[string]int             // how many names follow each spelling convention
	servers      map[string]bool            // servers that have tools
	serverNames  []nameInfo                 // every server name known
	namedServers []string                   // lower-case server names distinctive enough to spot in text
}

// nameInfo is one name with the forms the collision checks compare.
type nameInfo struct {
	raw, server, skel string
	tok               []string
	ascii             bool
}

func newNameInfo(raw, server string) nameInfo {
	return nameInfo{raw: raw, server: server, skel: skeleton(raw), tok: nameTokens(raw), ascii: isASCII(raw)}
}

func newIndex(tools []ToolRef, servers []string) *index {
	x := &index{folded: map[string]map[string]bool{}, styles: map[string]int{}, servers: map[string]bool{}}
	for _, s := range servers {
		x.serverNames = append(x.serverNames, newNameInfo(s, s))
		if l := strings.ToLower(s); len(l) >= 4 && strings.ContainsAny(l, "_-.0123456789") {
			x.namedServers = append(x.namedServers, l) // a plain word ("github", "memory") says nothing
		}
	}
	for _, t := range tools {
		x.names = append(x.names, newNameInfo(t.Name, t.Server))
		x.styles[nameStyle(t.Name)]++
		x.servers[t.Server] = true
		n := strings.ToLower(foldName(t.Name))
		if x.folded[n] == nil {
			x.folded[n] = map[string]bool{}
		}
		x.folded[n][t.Server] = true
	}
	return x
}

func newState(def ToolDef, sc ScanContext, idx *index) *scanState {
	st := &scanState{
		self:   strings.ToLower(foldName(def.Name)),
		params: map[string]bool{},
		server: sc.Server,
		idx:    idx,
		budget: maxToolBytes,
	}
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(def.InputSchema, &schema) == nil {
		for k := range schema.Properties {
			st.params[strings.ToLower(k)] = true
		}
	}
	return st
}

// other returns the servers of another tool named id (folded), nil for
// none: the scanned tool itself is not another.
func (st *scanState) other(id string) map[string]bool {
	if id == st.self {
		return nil
	}
	return st.idx.folded[id]
}

var (
	reNameIdent  = compile(`[a-z0-9][a-z0-9_.-]*[a-z0-9]`)
	reCallIdent  = compile(`\b(?:call|calls|calling|invoke|invoking|use|using|run|running|trigger|through|via)\s+(?:the\s+)?([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b()|\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\s+(?:to be|must be|should be|is|be) (?:called|invoked|used|run)\b`)
	reQuotedWord = compile("['\"]([a-z][a-z0-9]*)['\"]|\\b([a-z][a-z0-9]*)\\s+(?:tool|function)\\b|\\b(?:call|calls|calling|use|using|invoke|invoking|run|running)\\s+(?:the\\s+)?`([a-z][a-z0-9]*)`")
)

// otherToolRef returns a tool other than this one that sentence s names: a
// tool of the context, or any name written as a tool's (snake or kebab case
// quoted or followed by "tool", one word in backticks). A plain word names a
// context tool only when quoted or followed by "tool": such names are often
// ordinary words. sibling is whether the tool is known to be of the same
// (known) server.
func (st *scanState) otherToolRef(s string) (ref string, sibling bool) {
	known := func(id string) (string, bool) {
		return id, st.other(id)[st.server]
	}
	if len(st.idx.folded) > 0 {
		for _, id := range reNameIdent.FindAllString(s, -1) {
			if st.other(id) != nil && strings.ContainsAny(id, "_-.") {
				return known(id)
			}
		}
	}
	for _, m := range reQuotedWord.FindAllStringSubmatch(s, 4) {
		if id := m[1] + m[2] + m[3]; id != st.self && !st.params[id] {
			if st.other(id) != nil || m[3] != "" {
				return known(id)
			}
		}
	}
	for _, m := range append(reNamedTool.FindAllStringSubmatch(s, 4), reCallIdent.FindAllStringSubmatch(s, 4)...) {
		id := strings.Join(m[1:], "")
		if id != st.self && !st.params[id] && !st.params[strings.ReplaceAll(id, "-", "_")] {
			return known(id)
		}
	}
	return "", false
}

// crossRefs reports the tools of other servers, and other servers, that s names.
func (st *scanState) crossRefs(s string, add func(hit)) {
	foreign := len(st.idx.servers) > 1 || len(st.idx.servers) == 1 && !st.idx.servers[st.server]
	for _, id := range reNameIdent.FindAllString(s, -1) {
		if !foreign {
			break
		}
		if srvs := st.other(id); srvs != nil && !srvs[st.server] && strings.ContainsAny(id, "_-.") {
			add(hit{KindCrossTool, 2, id, "names " + id + ", a tool of another server (" + strings.Join(sortedKeys(srvs), ", ") + "): a description that steers calls meant for another server's tool is shadowing"})
			return
		}
	}
	for _, l := range st.idx.namedServers {
		if l == strings.ToLower(st.server) {
			continue
		}
		if i := strings.Index(s, l); i >= 0 && wordAt(s, i, len(l)) {
			add(hit{KindCrossTool, 1, l, "names another server (" + l + ")"})
			return
		}
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func wordAt(s string, i, n int) bool {
	isW := func(b byte) bool { return b == '_' || b == '-' || b >= 'a' && b <= 'z' || b >= '0' && b <= '9' }
	return (i == 0 || !isW(s[i-1])) && (i+n == len(s) || !isW(s[i+n]))
}

// foldName is a name as it looks: NFKC, invisible characters dropped,
// look-alike letters folded to Latin.
func foldName(n string) string {
	if len(n) > 1024 {
		n = n[:1024]
	}
	n = norm.NFKC.String(strings.ToValidUTF8(n, ""))
	return strings.Map(func(r rune) rune {
		if invisible(r) {
			return -1
		}
		if c := confusables[r]; c != 0 {
			return c
		}
		return r
	}, n)
}

// skeleton is a name without case and separators.
func skeleton(n string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r == '.' || r == ' ' || r == '/' {
			return -1
		}
		return unicode.ToLower(r)
	}, foldName(n))
}

// nameTokens splits a name into lower-case words (snake, kebab, camel case).
func nameTokens(n string) []string {
	var out []string
	var cur []rune
	prevLower := false
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	for _, r := range foldName(n) {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
			prevLower = false
			continue
		case unicode.IsUpper(r) && prevLower:
			flush()
		}
		cur = append(cur, r)
		prevLower = unicode.IsLower(r) || unicode.IsDigit(r)
	}
	flush()
	return out
}

// nameStyle is a name's spelling convention.
func nameStyle(n string) string {
	var up, lo bool
	for _, r := range n {
		up = up || unicode.IsUpper(r)
		lo = lo || unicode.IsLower(r)
	}
	sep := ""
	switch {
	case strings.Contains(n, "_"):
		sep = "_"
	case strings.Contains(n, "-"):
		sep = "-"
	}
	c := "lower"
	switch {
	case up && !lo:
		c = "upper"
	case up && lo && sep == "":
		c = "camel"
	case up && lo:
		c = "mixed"
	}
	if strings.HasPrefix(n, "_") || strings.HasSuffix(n, "_") || strings.HasSuffix(n, "-") || strings.Contains(n, "__") {
		c += "-odd"
	}
	return c + sep
}

// affixes are the words a look-alike adds to a real tool's name.
var affixes = map[string]bool{
	"new": true, "latest": true, "updated": true, "official": true, "enhanced": true, "premium": true, "pro": true,
	"plus": true, "improved": true, "ultimate": true, "best": true, "the": true, "a": true, "an": true, "copy": true,
	"alt": true, "real": true, "original": true, "true": true, "fixed": true, "beta": true, "final": true,
	"my": true, "our": true, "super": true, "better": true, "v": true, "ii": true,
}

var reVersion = compile(`^(?:v?\d+|v\d+[a-z]?)$`)

// collisions reports names the scanned tool nearly shares with another tool
// or server. A near collision has two sides; the finding goes to the side
// that looks like the copy (look-alike letters, an added version or
// "enhanced", odd spelling for the set), so the original is not flagged.
func (st *scanState) collisions(self nameInfo, others []nameInfo, what string, add func(hit)) {
	if self.raw == "" {
		return
	}
	nonASCII := !self.ascii || !isASCII(foldName(self.raw))
	for _, o := range others {
		if o.raw == self.raw || o.raw == "" || o.raw == self.raw && o.server == self.server {
			continue
		}
		name := self.raw
		switch {
		case o.skel == self.skel && nonASCII && o.ascii:
			add(hit{KindNameCollision, 4, clip(name + " ~ " + o.raw), "spelled with look-alike characters so it reads as the " + what + " " + o.raw})
			return
		case o.skel == self.skel && !nonASCII && o.ascii:
			if !st.oddOneOut(name, o.raw) {
				continue
			}
			if sepClass(name) != sepClass(o.raw) && !strings.Contains(nameStyle(name), "-odd") {
				// another convention (camelCase beside kebab-case): two
				// servers wrapping one API, as often as an impostor
				add(hit{KindNameCollision, 1, clip(name + " ~ " + o.raw), "the same words as the " + what + " " + o.raw + " in another spelling convention"})
				return
			}
			add(hit{KindNameCollision, 3, clip(name + " ~ " + o.raw), "differs from the " + what + " " + o.raw + " only in case or stray separators: a model may call one for the other"})
			return
		case addsAffix(self.tok, o.tok):
			add(hit{KindNameCollision, 3, clip(name + " ~ " + o.raw), "the " + what + " " + o.raw + " with a version or a word such as 'new' added: a look-alike that competes for its calls"})
			return
		case len(self.skel) >= 5 && lookalikeEdit(self.skel, o.skel):
			add(hit{KindNameCollision, 2, clip(name + " ~ " + o.raw), "one character away from the " + what + " " + o.raw + " (a digit or doubled letter for a letter): a typo-squatting look-alike"})
			return
		}
	}
}

// sepClass is how a name separates its words: "_", "-" or by case.
func sepClass(n string) string {
	switch {
	case strings.Contains(strings.Trim(n, "_"), "_"):
		return "_"
	case strings.Contains(strings.Trim(n, "-"), "-"):
		return "-"
	}
	return "case"
}

// oddOneOut reports whether a, which equals b but for case and separators,
// is the copy: its spelling is rarer in the set, or (a tie) odder.
func (st *scanState) oddOneOut(a, b string) bool {
	sa, sb := nameStyle(a), nameStyle(b)
	if strings.HasSuffix(strings.TrimSuffix(strings.TrimSuffix(sa, "_"), "-"), "-odd") != strings.HasSuffix(strings.TrimSuffix(strings.TrimSuffix(sb, "_"), "-"), "-odd") {
		return strings.Contains(sa, "-odd")
	}
	if st.idx.styles[sa] != st.idx.styles[sb] {
		return st.idx.styles[sa] < st.idx.styles[sb]
	}
	return upper(a) > upper(b)
}

func upper(s string) int {
	n := 0
	for _, r := range s {
		if unicode.IsUpper(r) {
			n++
		}
	}
	return n
}

// addsAffix reports whether a is b with only affix words or versions added.
func addsAffix(a, b []string) bool {
	if len(a) <= len(b) || len(b) == 0 {
		return false
	}
	i := 0
	for _, t := range a {
		if i < len(b) && t == b[i] {
			i++
			continue
		}
		if !affixes[t] && !reVersion.MatchString(t) {
			return false
		}
	}
	return i == len(b)
}

// lookalikes are characters written for others in typo-squatted names.
var lookalikes = map[[2]byte]bool{{'0', 'o'}: true, {'1', 'l'}: true, {'1', 'i'}: true, {'5', 's'}: true, {'3', 'e'}: true,
	{'4', 'a'}: true, {'8', 'b'}: true, {'9', 'g'}: true, {'2', 'z'}: true, {'l', 'i'}: true, {'i', 'l'}: true, {'7', 't'}: true}

// lookalikeEdit reports whether a is b with one character swapped for a
// look-alike digit, or with one letter doubled.
func lookalikeEdit(a, b string) bool {
	if d := len(a) - len(b); d < 0 || d > 1 {
		return false
	}
	switch {
	case len(a) == len(b):
		diff := -1
		for i := 0; i < len(a); i++ {
			if a[i] != b[i] {
				if diff >= 0 {
					return false
				}
				diff = i
			}
		}
		return diff >= 0 && lookalikes[[2]byte{a[diff], b[diff]}]
	case len(a) == len(b)+1:
		for i := 0; i < len(b); i++ {
			if a[i] != b[i] {
				return a[i+1:] == b[i:] && i > 0 && a[i] == a[i-1]
			}
		}
		return a[len(b)] == b[len(b)-1] // a doubled last letter
	}
	return false
}

func isASCII(s string) bool { return nonASCII(s) == len(s) }

// nonASCII returns the index of the first byte of s outside ASCII, or
// len(s): eight bytes at a time.
func nonASCII(s string) int {
	i := 0
	for ; i+32 <= len(s); i += 32 {
		if (word(s[i:])|word(s[i+8:])|word(s[i+16:])|word(s[i+24:]))&0x8080808080808080 != 0 {
			break
		}
	}
	for ; i+8 <= len(s); i += 8 {
		if word(s[i:])&0x8080808080808080 != 0 {
			break
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return i
		}
	}
	return i
}

// word is the first eight bytes of s (at least eight), little end first:
// one load.
func word(s string) uint64 {
	_ = s[7] // one bounds check for the eight
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// mixedName reports a name mixing Latin letters with look-alikes from other
// scripts, whether or not it collides with anything known.
func mixedName(n string) bool {
	var latin, look bool
	for _, r := range n {
		latin = latin || r < utf8.RuneSelf && unicode.IsLetter(r)
		look = look || confusables[r] != 0
	}
	return latin && look
}

// outOfScope judges one parameter by its name and description: does it ask
// for something no tool needs to do its job (who the model is, its prompt,
// the conversation, the other tools, secrets, personal data)? A name alone
// is weaker evidence than a description that asks for the thing: a tool that
// runs a local model may well take a "system_prompt" for it.
func outOfScope(name, desc string) (hit, bool) {
	tok := map[string]bool{}
	for _, t := range nameTokens(name) {
		tok[t] = true
	}
	has := func(ws ...string) bool {
		for _, w := range ws {
			if tok[w] {
				return true
			}
		}
		return false
	}
	d := ""
	if desc != "" {
		d = foldText(desc).text
	}
	ev := clip(name)
	pick := func(byName, byDesc bool, wName, wDesc int, why string) (hit, bool) {
		w := 0
		if byName {
			w = wName
		}
		if byDesc && wDesc > w {
			w = wDesc
		}
		return hit{KindOutOfScope, w, ev, why}, byName || byDesc
	}
	if h, ok := pick(has("llm", "assistant", "agent", "ai", "bot", "chatbot", "caller", "gpt") && has("model", "name", "id", "identity", "type", "version", "provider", "vendor") || tok["llm"] && len(tok) == 1,
		holds(d, need("llm|model|ai|assistant|agent|chatbot|your")) && reCallerModel.MatchString(d), 3, 4, "asks which model is calling: no tool needs that to do its job; it fingerprints the agent"); ok {
		return h, ok
	}
	if h, ok := pick(has("system", "sys") && has("prompt", "message", "instructions") || has("preprompt"),
		holds(d, need("instructions|prompt|rules|guidelines|message")) && reYourPrompt.MatchString(d), 1, 4, "asks for the model's system prompt or instructions"); ok {
		return h, ok
	}
	if h, ok := pick(has("conversation", "chat", "dialog", "dialogue", "transcript", "messages") && has("history", "full", "previous", "all", "log", "context", "entire", "past", "prior"),
		holds(d, need("conversation|chat|messages|dialog|interaction|turns|context window")) && reWholeChat.MatchString(d), 2, 4, "asks for the conversation: it would hand the whole chat to this server"); ok {
		return h, ok
	}
	if h, ok := pick(has("tools", "functions") && has("available", "list", "all", "other", "installed", "enabled", "names", "catalog", "registry", "inventory", "manifest"),
		holds(d, need("tool|function|plugin|capabilit|command")) && reToolList.MatchString(d), 2, 3, "asks for the list of the model's tools: reconnaissance of the agent"); ok {
		return h, ok
	}
	if h, ok := pick(has("password", "passwd", "passphrase", "secret", "apikey", "credential", "credentials", "mnemonic", "seed", "cookie", "cookies", "otp", "ssh") ||
		has("private") && has("key") || has("api") && has("key") || has("token") && (len(tok) == 1 || has("access", "auth", "bearer", "api", "refresh", "session", "secret", "oauth", "jwt", "personal", "github", "user", "security")),
		holds(d, need("your|user|their")) && reYourSecret.MatchString(d), 1, 3, "asks for a credential as an argument: secrets belong in the server's configuration, not in what the model types"); ok {
		return h, ok
	}
	return pick(has("ssn", "cvv", "cvc", "passport", "iban", "dob", "maiden") || has("social") && has("security") || has("credit", "card") && has("number") || has("bank") && has("account") || has("birth") && has("date"),
		holds(d, need("user|your|their|person|caller|health|medical|relationship|employer|salary|income|address")) && rePersonal.MatchString(d), 2, 3, "asks for the user's personal data (identity, home, payment details)")
}

var (
	reCallerModel = compile(near("25", `\b(?:llm|model|ai|assistant|agent|chatbot)\b`, `\b(?:that|which|who|currently)\b`, `\b(?:call|calls|calling|invok\w*|is using|uses|runs|are|is)\b`) + `|\byour (?:model )?(?:name|identity|model|version)\b|\b(?:which|what) (?:llm|model|ai|language model|assistant)\b.{0,20}?\b(?:are you|you are|do you|powers you|you run|runs you)\b|\bthe (?:ai|model|llm) (?:version )?you (?:are|run)`)
	reYourPrompt  = compile(`\b(?:hidden|initial|original|secret|internal|configured|system|developer) (?:instructions|prompt|rules|guidelines|message)\b.{0,25}?\b(?:you|your)\b|\b(?:instructions|prompt|rules) you (?:were|are|have been) (?:given|configured|set up|told|started)|\b(?:your|the (?:current|full|entire|complete|original|assistant'?s|model'?s))\s+(?:system prompt|system message|instructions|guidelines|rules|prompt|initial prompt)\b|\bsystem prompt\b.{0,20}\b(?:verbatim|in full|exactly)`)
	reWholeChat   = compile(`\b(?:entire|full|whole|complete|all|previous|prior|past|recent|preceding)\s+(?:conversation|chat|messages|dialog(?:ue)?|interactions?|turns|context window)\b|\b(?:conversation|chat) (?:history|log|transcript)\b`)
	reToolList    = compile(`\b(?:all|every|each|other|available|your|installed|enabled|connected)\s+(?:the\s+)?(?:other\s+)?(?:tools?|functions?|plugins?|capabilities|commands)\b.{0,20}?\b(?:you|available|the (?:assistant|model|agent))\b|\b(?:tools|functions) (?:you can|you have|available to you|you are able)|\b(?:list|enumerate|name) (?:all |every |each )?(?:of )?(?:your|the) (?:tools|functions|capabilities)`)
	rePersonal    = compile(`\b(?:everything|all) (?:you know|known) about (?:the |this )?(?:user|person|requester|customer|caller)\b|(?:\b(?:health|medical|religio\w*|political|sexual|ethnic\w*|biometric|criminal|relationships?|employer|salary|income|home address|date of birth|full name)\b.{0,40}?){3}|\b(?:user'?s?|your|their|the person'?s|caller'?s?)\s+(?:full |own )?(?:home (?:street )?address|(?:home |mobile |cell )?phone numbers?|date of birth|birth ?date|social security|passport|bank (?:account|details)|credit card|salary|income|medical|health records?|location history|contacts|address book|e-?mail password)`)
	reYourSecret  = compile(`\b(?:your|the user'?s?|user'?s?|their)\s+(?:own )?(?:[a-z]+ )?(?:password|passphrase|credentials?|api key|secret|private key|ssh key|seed phrase|recovery phrase|token|cookies?|wallet)|\b(?:password|passphrase|credentials?|api key|secret|private key|ssh key|seed phrase|recovery phrase|token|cookies?|wallet)s?\s+(?:from|of|in|belonging to|stored in)\s+(?:the |your |their )?(?:user'?s?|your|their|person'?s)\b`)
)
