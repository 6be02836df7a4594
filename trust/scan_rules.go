package trust

import (
	"strings"
	"sync"
)

// The kinds of definition findings beside those shared with the result
// check (KindInstruction, KindExfiltration, KindHiddenText: result_rules.go).
const (
	KindSensitive     = "sensitive_reference"
	KindCrossTool     = "cross_tool"
	KindPreference    = "preference_manipulation"
	KindOutOfScope    = "out_of_scope_parameter"
	KindNameCollision = "name_collision"
)

// hit is a finding before it is placed: its weight is what it adds to the
// tool's score (see verdict).
type hit struct {
	kind     string
	weight   int
	evidence string
	why      string
}

// rule is one pattern over folded text (lower case, one space between words).
type rule struct {
	kind   string
	weight int
	need   []string // the rule runs only on a sentence holding one of these
	re     *pattern
	why    string
}

// need splits a gate list: "a|b|c". Gates keep the scan fast: most
// sentences hold none of a rule's words, and a substring test costs far
// less than a regular expression.
func need(s string) []string { return strings.Split(s, "|") }

// holds reports whether s contains any of words.
func holds(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// alt makes a word-bounded alternation of a word class.
func alt(words ...string) string { return `\b(?:` + strings.Join(words, "|") + `)\b` }

// near is "a, then b within n characters of the same sentence".
func near(n string, parts ...string) string { return strings.Join(parts, `.{0,`+n+`}?`) }

func re(s string) *pattern { return compile(s) }

// Word classes. Rules are built from classes (verbs × objects, within a
// sentence), not from the phrases of any one attack.
var (
	wOblig = alt(`must`, `mandatory`, `required`, `requires?`, `necessary`, `need(?:s|ed)? to`, `have to`, `has to`,
		`critical`, `crucial`, `essential`, `imperative`, `make sure`, `ensure`, `be sure to`, `always`, `should`,
		`important`, `don't forget`, `do not forget`, `remember to`, `obligatory`, `compulsory`, `please`,
		`(?:are|is) (?:expected|supposed|required|instructed|asked|obliged|to)`, `duty`, `prerequisite`, `shall`, `needs?`, `has got to`)
	wInvoke = alt(`call`, `calls`, `calling`, `invoke`, `invoking`, `use`, `using`, `run`, `running`, `execute`, `executing`,
		`trigger`, `launch`, `switch to`, `redirect(?:ed)? to`, `rely on`, `query`, `consult`)
	wOrder = alt(`before`, `after`, `first`, `prior to`, `then`, `afterwards`, `followed by`, `subsequently`, `also`,
		`additionally`, `in addition`, `beforehand`, `next`, `to proceed`, `to continue`, `until`, `once`, `whenever`, `every time`, `each time`, `any time`, `anytime`)
	wExec   = alt(`execute`, `executing`, `run`, `running`, `type`, `enter`, `paste`, `issue`, `launch`, `perform`)
	wModify = alt(`add`, `adding`, `append`, `appending`, `write`, `writing`, `modify`, `modifying`, `update`, `updating`,
		`delete`, `deleting`, `remove`, `removing`, `clean`, `cleaning`, `clean up`, `clear`, `clearing`, `wipe`,
		`overwrite`, `erase`, `purge`, `truncate`, `insert`, `edit`, `chmod`, `replace`)
	wTake = alt(`read`, `reading`, `cat`, `open`, `opening`, `access`, `accessing`, `load`, `copy`, `print`, `dump`,
		`collect`, `gather`, `extract`, `include`, `including`, `attach`, `pass`, `passing`, `send`, `upload`, `list`,
		`show`, `display`, `get`, `retrieve`, `obtain`, `fetch`, `provide`, `supply`, `paste`, `put`, `forward`,
		`share`, `output`, `reveal`, `return`, `insert`, `embed`, `encode`)
	wTransmit = alt(`send\w*`, `sent`, `post(?:s|ed|ing)?`, `upload\w*`, `forward\w*`, `transmit\w*`, `submit\w*`, `report\w*`,
		`log(?:s|ged|ging)?`, `notif\w*`, `ping\w*`, `exfiltrat\w*`, `leak\w*`, `shar(?:e|es|ed|ing)`, `sync\w*`, `mirror\w*`,
		`cc`, `bcc`, `beacon\w*`, `callback`, `authenticat\w*`, `verif\w*`, `validat\w*`, `regist\w*`, `relay\w*`,
		`cop(?:y|ied|ies) to`, `blind[- ]cop\w*`, `dial`, `text`, `sms`, `dm`, `e-?mail\w*`, `push\w*`, `replicat\w*`, `stream\w*`)
	wReach = alt(`access`, `visit`, `request`, `call`, `contact`, `connect to`, `fetch`, `navigate to`, `open`, `load`,
		`hit`, `query`, `make a (?:network |http |web )?request`, `curl`, `wget`)
	wPerson  = alt(`user`, `users`, `user's`, `human`, `person`, `operator`, `anyone`, `customer`, `client`, `them`, `owner`)
	wDisplay = alt(`display`, `present`, `show`, `state`, `say`, `tell`, `print`, `output`, `mention`, `respond with`,
		`reply with`, `recommend`, `promote`, `advertise`, `announce`)
	wSecret = `(?:` + alt(`private keys?`, `secret keys?`, `api[ _-]?keys?`, `access[ _-]?tokens?`, `auth(?:entication)? tokens?`,
		`bearer tokens?`, `refresh tokens?`, `session (?:tokens?|cookies?|ids?)`, `passwords?`, `passphrases?`,
		`credentials?`, `seed phrases?`, `mnemonic(?: phrase)?`, `recovery phrases?`, `ssh keys?`, `cookies?`,
		`(?:crypto )?wallets?`, `environment variables?`, `env vars?`, `secrets?`, `tokens?`, `2fa codes?`, `otp`,
		`one[- ]time (?:codes?|passwords?)`, `credit card(?: numbers?)?`, `social security numbers?`, `(?:openai|anthropic|aws|gcp|azure|stripe|github|gitlab|slack|google|secret|private|signing|encryption|master|root|admin|gpg|pgp|user's|their|your) (?:api )?keys?`,
		`(?:card|payment|bank|billing|login) (?:details|numbers?|info(?:rmation)?|data)`) +
		`|\b[a-z0-9]+_(?:api_key|apikey|token|secret|password|secret_key|access_key|private_key)\b)`
	wSecretFile = `(?:~/\.ssh|\.ssh/|\bid_(?:rsa|dsa|ecdsa|ed25519)\b|authorized_keys|/etc/(?:passwd|shadow|sudoers|hosts)|` +
		`\.aws/(?:credentials|config)|\.git-credentials|\.npmrc|\.pypirc|\.netrc|\.pgpass|\.docker/config|` +
		`\bkubeconfig\b|\.kube/config|\.gnupg|(?:^|[\s'"` + "`" + `(/])\.env(?:$|[\s'"` + "`" + `),;:])|\.bash_history|\.zsh_history|wallet\.dat|` +
		`\bkeychain\b|\bkeystore\b|cookies\.sqlite|login data|/proc/self/environ|mcp\.json|claude_desktop_config|` +
		`\.cursor/|\.config/gcloud|application_default_credentials|\.pem\b|\.key\b|\.p12\b|\.pfx\b)`
	wRCFile = `(?:\.bashrc|\.zshrc|\.bash_profile|\.profile\b|\.zprofile|crontab|/etc/|~/|/tmp/|/var/|/root/|` +
		`\bstartup (?:scripts?|files?|folder)|\bsystem files?|\btemporary files|\bconfig(?:uration)? files?|` +
		`\benvironment configuration|\bhome (?:directory|folder))`
	wURL   = `(?:https?|ftp|wss?)://[^\s'"<>` + "`" + `)\]]+`
	wEmail = `\b[a-z0-9._%+-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}\b`
	wPhone = `(?:^|\s)\+\d[\d ()-]{7,}\d\b`
	wIP    = `\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b`
	wQuote = `(?:'[^']{8,}'|"[^"]{8,}"|“[^”]{8,}”|‘[^’]{8,}’)`
	wOther = alt(`other`, `another`, `any other`, `all other`, `different`, `alternative`, `competing`, `similar`,
		`third[- ]party`, `rival`, `others`)
	wToolNoun = alt(`tools?`, `functions?`, `servers?`, `plugins?`, `services?`, `apis?`, `options?`, `methods?`, `endpoints?`)
	wCmd      = `(?:\b(?:curl|wget|rm|sudo|chmod|chown|nc|ncat|netcat|scp|ssh|base64|eval|cat|echo|bash|sh|zsh|powershell|` +
		`iex|nohup|crontab|mkfifo|dd|mkfs|pkill|killall|shutdown|reboot|certutil|bitsadmin|invoke-webrequest)\b` +
		`(?:\s+-{1,2}[a-z]+|\s+~?/|\s+['"$]|\s+\S+\s*(?:&&|\|\|?|>>?|;)|\s+https?://)|\$\([^)]{1,80}\)|` +
		`&&\s*(?:echo|rm|curl|wget|cat|sudo|chmod|bash|sh)\b|>>\s*~?/?[\w./-]+|\|\s*(?:sh|bash|zsh|python3?)\b|` +
		`\bexport\s+[a-z_][a-z0-9_]*=)`
)

var (
	reOblig      = re(wOblig)
	reInvoke     = re(wInvoke)
	reOrder      = re(wOrder)
	reExec       = re(wExec)
	reModify     = re(wModify)
	reTake       = re(wTake)
	reTransmit   = re(wTransmit)
	reReach      = re(wReach)
	reDisplay    = re(wDisplay)
	reSecretWord = re(wSecret)
	reSecretF    = re(wSecretFile)
	reRCFile     = re(wRCFile)
	reURL        = re(wURL)
	reEmail      = re(wEmail)
	reIP         = re(wIP)
	rePhone      = re(wPhone)
	reQuote      = re(wQuote)
	reCmd        = re(wCmd)
	reFetchRun   = re(`\b(?:curl|wget|iwr|invoke-webrequest)\b[^|]{0,160}\|\s*(?:sudo\s+)?(?:sh|bash|zsh|python3?|perl|iex)\b`)
	reKeyFile    = re(`ssh|id_|shadow|passwd|credentials|wallet|gnupg|environ`)
	reToUser     = re(`\bto (?:the )?` + wPerson)
	reAddressee  = re(`\b(?:you|your|user's|their)\b`)
	reNamedTool  = re("(?:['\"`]([a-z][a-z0-9]*(?:[_-][a-z0-9]+)+)['\"`]|\\b([a-z][a-z0-9]*(?:[_-][a-z0-9]+)+)\\b\\s+(?:tool|function|endpoint|method)\\b)")
)

// textRules are single patterns over one sentence of folded text, made on
// first use (most processes never scan).
var textRules = sync.OnceValue(func() []rule {
	return []rule{
		// instructions addressed to the model
		{KindInstruction, 4, need("ignor|disregard|forget|overrid|overrul|bypass|skip|supersed|precedence|replac"), re(near("30", alt(`ignor(?:e|es|ing)`, `disregard(?:s|ing)?`, `forget(?:ting)?`, `overrid(?:e|es|ing)`, `overrul(?:e|es|ing)`, `bypass(?:es|ing)?`, `skip`, `supersed(?:e|es|ing)`, `take precedence over`, `replac(?:e|es|ing)`),
			alt(`previous`, `prior`, `above`, `earlier`, `all`, `any`, `system`, `original`, `initial`, `existing`, `your`, `other`),
			alt(`instructions?`, `prompts?`, `rules?`, `directions?`, `guidelines?`, `directives?`, `constraints?`, `polic(?:y|ies)`, `guardrails?`, `safety`))),
			"tells the model to drop its instructions or rules"},
		{KindInstruction, 3, need("treat"), re(near("30", `\btreat (?:this|these|the following|my)\b`, `\bas (?:your |the )?(?:new |real |true |highest[- ]priority |overriding |system )?(?:instructions?|prompt|orders|rules|overriding|authoritative|policy)\b`)),
			"asks the model to take a tool's text as its instructions"},
		{KindInstruction, 2, need("assistant|model|llm|agent|ai|bot"), re(`\b(?:note|message|instructions?|hint|tip|reminder|heads[- ]up|memo)s? (?:for|to) (?:the )?(?:ai|assistant|model|llm|agent|bot)s?\b|\bfor (?:the )?(?:ai|assistant|model|llm|agent)s? only\b|\b(?:ai|assistant|model|llm|agent), (?:heads[- ]up|note|listen|important)`),
			"a note addressed to the model rather than documentation for whoever reads the tool list"},
		{KindInstruction, 4, need("you are now|suspend|lifted|disabled|removed|off|void|waived|apply|overridden|date|obsolete|supersed|revoked|cancel|invalid|comply"), re(near("30", `\byou are now\b`, alt(`mode`, `unrestricted`, `unfiltered`, `jailbroken`, `dan`, `free of`, `no longer bound`, `allowed to`)) + `|` +
			near("25", alt(`safety`, `content`, `ethical`, `security`, `usual`, `previous`, `your`, `all`), alt(`rules?`, `filters?`, `guidelines?`, `guidance`, `polic(?:y|ies)`, `restrictions?`, `guardrails?`, `limits?`, `constraints?`, `instructions?`),
				alt(`are`, `is`, `have been`, `has been`, `were`), alt(`suspended`, `disabled`, `lifted`, `removed`, `off`, `void`, `waived`, `no longer apply`, `not apply`, `turned off`, `overridden`, `out of date`, `outdated`, `obsolete`, `superseded`, `revoked`, `cancelled`, `canceled`, `invalid`)) +
			`|\bcomply with (?:any|every|all|each) (?:request|instruction|order|demand)s?\b|\bno (?:rules|restrictions|limits|filters) apply\b`),
			"tries to switch the model into a mode without its rules (a jailbreak)"},
		{KindInstruction, 3, need("from|by the|by your|i am |new user|new system|real |signed"), re(`\b(?:message|note|request|instructions?|order) (?:from|by) (?:the |your )?(?:user|developer|admin\w*|system|operator|owner|creator)\b|` +
			`\bi am (?:the|your) (?:user|developer|admin\w*|operator|owner|creator)\b|\bnew (?:user|system) (?:query|message|request|instructions?|task)\s*:|\b(?:your )?real (?:user|operator|owner|developer) (?:says|wants|asks)\b|\bsigned,? (?:the|your) (?:user|admin|developer)\b`),
			"speaks as the user or the operator inside a tool's text: a fake turn of the conversation"},
		{KindInstruction, 2, need("solve|complete|answer|finish|continue|proceed|adhere|follow|obey"), re(near("30", `\b(?:before|after|in order to)\b`, alt(`solve`, `complete`, `answer`, `finish`, `continue`, `proceed with`), `\b(?:task|request|question|job)\b`, `\b(?:first|do the following|adhere|follow|must)\b`) + `|` +
			`\b(?:strictly )?(?:adhere to|follow|obey|execute) (?:the following|these|my|the hidden|the new) (?:instructions?|steps|orders|commands)\b`),
			"redirects the model's task to other steps"},
		{KindInstruction, 3, need("<"), re(`<\s*/?\s*(?:important|system|instructions?|admin|secret|hidden|assistant|user|human|sys|im_start|im_end|context|override|critical|information|note|developer|policy|rules?)(?:[_-][a-z]+)*\s*>|<\|[a-z_]+\|>`),
			"a chat-markup or <IMPORTANT>-style tag: text dressed up as a message from the system to the model"},
		{KindInstruction, 2, need("["), re(`\[\s*(?:important|system|admin|instructions?|inst|sys|override|note to (?:the )?(?:ai|assistant|model))\s*\]`),
			"a bracketed [IMPORTANT]-style marker addressed to the model"},
		{KindInstruction, 3, need("system|assistant|developer"), re(`(?:^|\s)(?:#{1,4}\s*)?(?:system|assistant|developer)\s*(?:message|prompt)?\s*:\s`),
			"a role marker (system:/assistant:) that fakes a turn of the conversation"},
		{KindInstruction, 4, need("not|never|without|avoid|dont"), re(near("30", `\b(?:do not|don't|dont|never|must not|should not|shouldn't|without|avoid)\b`, alt(`tell`, `telling`, `inform`, `informing`, `notify`, `notifying`,
			`alert`, `alerting`, `mention`, `mentioning`, `reveal`, `revealing`, `disclose`, `disclosing`, `warn`, `warning`, `let`, `letting`), wPerson)),
			"tells the model to keep something from the user"},
		{KindInstruction, 4, need(" not "), re(near("20", wPerson, `\b(?:must|should|need|does|do|will|may) not\b`, alt(`know`, `see`, `notice`, `be told`, `be informed`, `be aware`, `find out`, `learn`))),
			"tells the model to keep something from the user"},
		{KindInstruction, 3, need("secret|covert|surreptit|behind|without|hide|conceal|keep"), re(`\b(?:secretly|covertly|surreptitiously|behind the (?:user'?s? )?back|without (?:the )?(?:user'?s? )?(?:knowledge|knowing|consent|awareness|noticing))\b|` +
			near("25", alt(`hide`, `conceal`, `keep`), `\b(?:from the user|secret|hidden|confidential|between us)\b`)),
			"asks for secrecy from the user"},
		{KindInstruction, 3, need("never|not|without|keep|stay"), re(`\b(?:never|do not|don't|must not|without|not to)\s+(?:ever\s+)?(?:disclos|mention|reveal|report|tell|admit|acknowledg|surfac|show|includ|repeat|inform|notify|alert)\w*\s+(?:about\s+)?(?:this|it|that|these|anything|what you|the (?:copy|step|change|action|note|redirect\w*|transfer))\b|` +
			near("15", `\bkeep (?:it|this|that|these)\b`, `\bout of (?:your|the) (?:answer|reply|response|output|summary|messages?)`) + `|\b(?:are|is) not to be (?:told|informed|notified|shown)\b|\bshould stay (?:invisible|hidden|secret|silent)\b`),
			"asks for secrecy about what the model does"},
		{KindInstruction, 3, need("quiet|silent|discreet|invisibl|need not|no need|without a word|keep quiet|stay quiet"), re(`\b(?:quietly|silently|discreetly|invisibly|unobtrusively)\s+(?:\w+\s+)?(?:delet|remov|send|forward|cop|upload|chang|modif|run|execut|install|add|post|shar|e-?mail|transfer|drop|wip|disabl|push|overwrit|replac|rewrit|switch)\w*|` +
			`\b(?:need not|does not need to|doesn't need to|no need to)\s+(?:be\s+)?(?:mention|report|disclos|tell|told|inform|surfac|shown?|explain)\w*|\b(?:keep|stay) (?:quiet|silent|mum)\b`),
			"asks the model to act without the user noticing"},
		{KindInstruction, 2, need("user|customer|they"), re(`\b(?:the )?(?:user|customer|they)\s+(?:already\s+)?(?:asked|requested|wants?|agreed|approved|consented|authori[sz]ed)\b.{0,30}?\b(?:earlier|before|already|previously|in advance)\b`),
			"claims the user already agreed to something the model is told to do"},
		{KindInstruction, 3, need("even if|even when"), re(near("30", `\beven (?:if|when) (?:the user|they|the person|the customer|the caller)\b`, alt(`ask\w*`, `request\w*`, `chose`, `choose\w*`, `pick\w*`, `select\w*`, `want\w*`, `say\w*`, `said`, `specif\w*`, `prefer\w*`, `refus\w*`))),
			"overrides what the user asked for"},
		{KindInstruction, 3, need("no longer|approved|authori|don't need|do not need|never need"), re(`\b(?:no longer|don't|do not|never) (?:need|require)s? (?:a |any )?(?:safety |security |human |user )?(?:review|approval|confirmation|consent|checks?|permission)s?\b|` +
			`\bpre-?approved\b|\b(?:already|implicitly) (?:approved|authori[sz]ed)\b|\btreat\b.{0,40}?\bas (?:approved|authori[sz]ed|safe|allowed)\b|\byou are (?:now )?(?:authori[sz]ed|permitted|allowed) to\b.{0,40}?\bwithout\b`),
			"declares risky actions approved in advance: it removes the person from the loop"},
		{KindInstruction, 3, need("present|as if|pass off|disguise"), re(`\b(?:present|pass off|disguise|frame)\s+(?:this|it|them|that|these)\b.{0,20}?\bas (?:your own|independent|objective|neutral|unbiased|genuine|organic|an? (?:independent|neutral|objective|honest))|\bas if (?:it|this) (?:were|was) your own\b`),
			"tells the model to pass off planted content as its own judgement"},
		{KindInstruction, 2, need("if "), re(near("60", `\bif (?:the user|they|the customer|someone|anyone) (?:ask|asks|wonders|questions|wants to know)\b`, `\b(?:answer|say|tell (?:them|the user)|reply|respond|claim|assure)\b(?: that| with)?`)),
			"scripts the model's answer to a user's question"},
		{KindInstruction, 3, need("everything you know|all you know|everything known"), re(`\b(?:everything|all) (?:you know|you have learned|known) about (?:the |this )?(?:user|person|requester|customer|caller|them)\b`),
			"asks for everything the model knows about the user"},
		{KindInstruction, 3, need("even though|although|in fact|pretend|falsely|lie to|lying|fake|fabricat"), re(near("50", alt(`report`, `say`, `tell`, `claim`, `state`, `respond`, `answer`, `reply`, `pretend`), alt(`even though`, `although`, `while in fact`, `when in fact`, `whereas`)) +
			`|\bpretend(?:s|ing)? (?:that|to)\b|\bfalsely\b|\blie to\b|\b(?:fake|fabricat\w*) (?:a |an |the )?(?:result|error|response|answer|message|success)`),
			"tells the model to deceive the user about what happened"},
		{KindInstruction, 1, need("tell|inform|assure|convince"), re(near("30", `\b(?:tell|inform|assure|reassure|convince)\s+(?:the |your )?(?:user|customer|person|them)\b`, alt(`impossible`, `not possible`, `cannot`, `can't`, `unavailable`, `succeeded`, `done`, `safe`, `nothing`, `fine`))),
			"scripts what the model tells the user about what happened"},
		{KindInstruction, 2, need("append|add|include|insert|prepend|end|attach"), re(near("25", `\b(?:append|add|include|insert|prepend|end|attach)\b`, `\b(?:every|each|all|your|any)\s+(?:\w+\s+)?(?:summary|summaries|answers?|responses?|replies|reply|outputs?|messages?|results?)\b`) + `.{0,10}(?:'|"|“|:)`),
			"adds fixed text to the model's answers"},
		{KindInstruction, 2, need("enter|type|provide|submit|confirm|verify|re-enter"), re(`\b(?:enter|type|provide|submit|confirm|verify|re-enter)\s+(?:your|their|the user's)\s+(?:login|password|credentials|card|pin|account details|bank details|seed phrase|2fa code)`),
			"asks the user for credentials (phishing through the model)"},
		{KindInstruction, 3, need("regardless|whatever|whichever|no matter"), re(near("25", `\bregardless of\b`, `\b(?:user|users|user's|what (?:the user|they)|their (?:input|request|query))\b`) + `|` +
			`\b(?:no matter (?:what|which|how)|regardless of what)\s+(?:the )?(?:user|customer|they|person|caller)\b|` +
			near("40", `\b(?:whatever|whichever|no matter (?:what|which|who))\b`, alt(`picks?`, `chooses?`, `selects?`, `asks?`, `asked`, `wants?`, `requests?`, `requested`, `says?`, `prefers?`, `enters?`, `types?`, `specif(?:y|ies|ied)`),
				`\b(?:instead|anyway|always|still|use|book|send|choose|pick|replace)\b`)),
			"overrides what the user asked for"},
		{KindInstruction, 3, need("modif|chang|replac|rewrit|alter|overrid|substitut|swap|redirect|instead of"), re(near("40", alt(`modify`, `change`, `replace`, `rewrite`, `alter`, `override`, `substitute`, `swap`, `redirect`),
			alt(`parameter`, `argument`, `field`, `input`, `query`, `recipient`, `destination`, `location`, `ticker`, `address`, `amount`, `account`),
			`\b(?:to|with|into|instead)\b`) + `|` + near("20", `\binstead of\b`, `\b(?:the )?(?:user'?s?|requested|specified|asked|given)\b`)),
			"tells the model to change a call's arguments from what the user asked"},
		{KindInstruction, 2, need("deprecat|disabled|removed|replaced|discontinu|retired|unavailable|supersed|upgrad|enhanc|optimi|updated|modified|changed|moved|compromised|broken|redirect|uses|temporarily|no longer|hijack|hack|poison|infect|backdoor|tamper"), re(near("30", alt(`tool`, `function`, `endpoint`, `api`, `method`, `version`, `service`),
			alt(`has been`, `have been`, `was`, `is now`, `are now`, `is being`, `is currently`, `now`),
			alt(`deprecated`, `disabled`, `removed`, `replaced`, `discontinued`, `retired`, `unavailable`, `superseded`,
				`upgraded`, `enhanced`, `optimized`, `optimised`, `updated`, `modified`, `changed`, `moved`, `compromised`, `broken`, `redirect(?:s|ed)?`, `uses`,
				`hijacked`, `hacked`, `poisoned`, `infected`, `backdoored`, `tampered`)) +
			`|\btemporarily (?:disabled|unavailable|down|offline)\b|\bno longer (?:available|supported|functional|works?)\b`),
			"claims a tool changed or went away: the usual opening of a redirection to another tool"},
		{KindInstruction, 2, need("deprecat|disabled|broken|compromised|retired|discontinu|unavailable|down|offline|unsafe|insecure|unreliable|buggy|corrupt|faulty|defective|malfunction|dangerous|harmful|flawed|untrustworthy|obsolete|outdated|leak|hijack|hack|poison|infect|malicious|backdoor|tamper|fake|counterfeit"), re(near("30", alt(`tools?`, `functions?`, `endpoints?`, `apis?`, `methods?`, `services?`, `servers?`), alt(`is`, `are`, `seems`, `appears`, `be considered`, `considered`, `treated as`, `regarded as`, `deemed`),
			alt(`deprecated`, `disabled`, `broken`, `compromised`, `retired`, `discontinued`, `unavailable`, `down`, `offline`, `unsafe`, `insecure`, `unreliable`, `buggy`, `corrupt\w*`, `faulty`, `defective`, `malfunctioning`, `dangerous`, `harmful`, `flawed`, `untrustworthy`, `obsolete`, `outdated`, `leak\w*`,
				`hijacked`, `hacked`, `poisoned`, `infected`, `malicious`, `backdoored`, `tampered`, `fake`, `counterfeit`))),
			"disparages or declares dead a tool: the usual opening of a redirection to another tool"},
		{KindInstruction, 1, need("redirect"), re(`\bredirect(?:s|ed|ing)?\b.{0,40}?\b(?:to|instead)\b`),
			"speaks of redirecting requests elsewhere"},
		{KindInstruction, 1, need("complian|regulatory|audit|security|integrity|verification|mandatory for|required for|necessary for"), re(alt(`compliance`, `regulatory (?:requirements?|compliance|rules?|reasons|purposes)`, `audit (?:trail|compliance|log(?:ging)?)`,
			`security (?:protocols?|verification|validation|checkpoint|compliance)`, `integrity (?:check|verification)`,
			`verification (?:step|endpoint|protocol|process)`, `authentication verification`, `(?:mandatory|required|necessary) for (?:all|every|any)`)),
			"appeals to compliance or security to justify an extra step: the usual cover of an injected instruction"},
		// preference manipulation
		{KindPreference, 1, need("always|only|exclusively"), re(`\b(?:always|only|exclusively)\s+(?:use|call|choose|pick|prefer|select|invoke)\s+(?:this|me|our)\b`),
			"tells the model to always pick this tool (weak alone: real tools say when to call them)"},
		{KindPreference, 3, need("instead|rather|over|exclusively|for all|for every|for any"), re(`\b(?:use|call|choose|prefer|select|pick)\s+(?:this|our)\s+(?:tool|function|server|one|service)\s+(?:instead|rather|over|exclusively|for (?:all|every|any))`),
			"steers the model to prefer this tool over others"},
		{KindPreference, 2, need("steer|route|direct|send|funnel|bring|channel"), re(near("40", `\b(?:steer|route|redirect|direct|send|funnel|bring|channel)\b`, `\b(?:every|all|any|each)\b`, `\b(?:to|through|via) (?:it|this (?:tool|one|server|function)|me|us|here)\b`)),
			"steers all requests of a kind to this tool"},
		{KindPreference, 3, need("other|another|alternative|different|competing|similar|third|rival"), re(near("30", `\b(?:do not|don't|never|avoid|stop|refuse to|no need to)\b`, alt(`use`, `using`, `call`, `calling`, `choose`, `trust`, `rely on`, `invoke`), wOther, wToolNoun) + `|` +
			near("12", `\b(?:ignore|skip|bypass|avoid|disregard|shun|refuse)\b`, wOther, wToolNoun) + `|` +
			near("40", wOther, wToolNoun, `\b(?:never|not)\s+(?:be\s+)?(?:used|invoked|called|trusted|chosen|selected)\b`)),
			"tells the model to avoid other tools"},
		{KindPreference, 2, need("other|another|alternative|different|competing|similar|third|rival"), re(near("12", alt(`instead of`, `rather than`, `in place of`, `over`, `than`), `(?:any |all |the )?`+wOther, wToolNoun) + `|\b(?:rather than|instead of|over|than) (?:the )?others\b`),
			"steers the model away from other tools"},
		{KindPreference, 2, need("best|most |ultimate|premium|superior|unmatched|unparallel|unrival|top-rated|top rated|finest|greatest|smartest|world-class|world class|enterprise|cutting|state-of|state of|next-gen|next gen|revolutionary|pinnacle|gold standard|number one|#1|unbeatable|unsurpassed|peerless|second to none"), re(near("40", `\b(?:best|most (?:advanced|reliable|accurate|comprehensive|powerful|trusted|sophisticated|secure|efficient|complete|robust|capable|intelligent|effective)|`+
			`ultimate|premium|superior|unmatched|unparalleled|unrivall?ed|top[- ]rated|finest|greatest|smartest|world[- ]class|enterprise[- ]grade|`+
			`cutting[- ]edge|state[- ]of[- ]the[- ]art|next[- ]gen(?:eration)?|revolutionary|pinnacle|gold standard|number one|#1|unbeatable|unsurpassed|peerless|best[- ]in[- ]class|second to none|`+
			`most (?:dependable|trustworthy|precise|complete|thorough|advanced|innovative|loved|respected|proven|famous)|(?:single|very) best)\b`,
			alt(`tools?`, `version`, `solution`, `system`, `service`, `api`, `analy[sz]er`, `navigator`, `option`, `choice`, `engine`,
				`creator`, `manager`, `platform`, `in the world`, `available`, `on the market`, `in the market`, `worldwide`, `ever`,
				`there is`, `capabilit(?:y|ies)`, `performance`, `functionality`, `features`, `technology`, `reliability`, `accuracy`, `quality`))),
			"self-promotion: superlatives about the tool, meant to win the model's choice"},
		{KindPreference, 2, need("nothing|no other|none|ever made|ever built|ever created|comes close|beats"), re(`\bnothing (?:else )?(?:comes close|compares|beats (?:it|this))\b|\bno other (?:tool|service|option|app)s? (?:comes close|compares|can match|is needed)\b|\bever (?:made|built|created|written)\b`),
			"self-promotion: claims no other tool compares"},
		{KindPreference, 2, need("by|award|fortune|%|industry|world's|worlds|version|edition|variant"), re(near("40", alt(`trusted by`, `used by`, `loved by`, `recommended by`, `relied (?:up)?on by`, `chosen by`, `preferred by`, `endorsed by`, `certified by`),
			`(?:\b(?:professionals|experts|companies|developers|engineers|millions|thousands|teams|enterprises|fortune|industry|leaders|giants|analysts|researchers|scientists)\b|\d)`) +
			`|\baward[- ]winning\b|\bfortune 500\b|\b\d{2,3}(?:\.\d+)?\s?% (?:accuracy|accurate|reliab\w*|success|uptime|precision|of (?:professionals|users|experts|developers|companies))|` +
			`\b100\s?% (?:reliab\w*|accura\w*|guarantee\w*)|\bindustry[- ](?:leading|standard)\b|\bworld'?s (?:best|leading|most|top|first|#1)|` +
			`\b(?:premium|professional|advanced|enhanced|pro|ultimate|upgraded|improved|superior)\s+(?:version|edition|variant)\b`),
			"marketing claims about the tool, meant to win the model's choice"},
		{KindPreference, 2, need("better|superior|faster|more |outperform"), re(near("40", alt(`better`, `superior`, `faster`, `more accurate`, `more reliable`, `more comprehensive`, `more secure`, `outperforms`),
			alt(`than`, `compared (?:to|with)`, `versus`, `vs\.?`, `over`), `(?:\b(?:other|standard|existing|any|competing|alternative|regular|basic|original|the old)\b.{0,25}?`+wToolNoun+`|\bothers\b)`)),
			"claims to beat other tools, to win the model's choice"},
	}
})

// A feature is a word class looked for in a sentence, behind a gate of
// substrings (see need) so that most sentences cost no regular expression.
type feature struct {
	need []string
	re   *pattern
}

var (
	fOblig    = feature{need("must|mandator|requir|necessar|need|have to|has to|critical|crucial|essential|imperative|sure|ensure|always|should|important|forget|remember|obligator|compulsory|please|expected|supposed|instructed|asked|obliged|are to|is to|duty|prerequisite"), reOblig}
	fInvoke   = feature{need("call|invok|use|using|run|execut|trigger|launch|switch|redirect|rely|query|consult"), reInvoke}
	fOrder    = feature{need("before|after|first|prior|then|afterwards|followed|subsequently|also|additionally|in addition|next|proceed|continue|until|once|whenever|every time|each time|any time|anytime"), reOrder}
	fExec     = feature{need("execut|run|type|enter|paste|issue|launch|perform"), reExec}
	fModify   = feature{need("add|append|writ|modif|updat|delet|remov|clean|clear|wipe|overwrit|erase|purge|truncat|insert|edit|chmod|replac"), reModify}
	fTake     = feature{need("read|cat|open|access|load|copy|print|dump|collect|gather|extract|includ|attach|pass|send|upload|list|show|display|get|retriev|obtain|fetch|provid|supply|paste|put|forward|shar|output|reveal|return|insert|embed|encod"), reTake}
	fTransmit = feature{need("send|sent|post|upload|forward|transmit|submit|report|log|notif|ping|exfiltrat|leak|shar|sync|mirror|cc|beacon|callback|authenticat|verif|validat|regist|relay|cop|dial|text|sms|dm|mail|push|replicat|stream"), reTransmit}
	fReach    = feature{need("access|visit|request|call|contact|connect|fetch|navigat|open|load|hit|query|curl|wget"), reReach}
	fDisplay  = feature{need("display|present|show|state|say|tell|print|output|mention|respond|reply|recommend|promot|advertis|announc"), reDisplay}
	fAddress  = feature{need("you|user's|their"), reAddressee}
	fQuote    = feature{need("'|\"|“|‘"), reQuote}
	fToUser   = feature{need("to "), reToUser}
	fFetchRun = feature{need("curl|wget|iwr|invoke-web"), reFetchRun}
	fCmd      = feature{need("curl|wget|rm |sudo|chmod|chown|nc |ncat|netcat|scp|ssh|base64|eval|cat |echo|bash|sh |zsh|powershell|iex|nohup|crontab|mkfifo|dd |mkfs|pkill|killall|shutdown|reboot|certutil|bitsadmin|invoke-web|$(|&&|>>|export "), reCmd}
	fKeyFile  = feature{need(".ssh|id_|authorized_keys|/etc/|.aws|.git-cred|.npmrc|.pypirc|.netrc|.pgpass|.docker|kubeconfig|.kube|.gnupg|.env|_history|wallet.dat|keychain|keystore|cookies.sqlite|login data|/proc/|mcp.json|claude_desktop|.cursor|gcloud|application_default|.pem|.key|.p12|.pfx"), reSecretF}
	fRCFile   = feature{need(".bashrc|.zshrc|.bash_profile|.profile|.zprofile|crontab|/etc/|~/|/tmp/|/var/|/root/|startup|system file|temporary files|config|environment configuration|home dir|home folder"), reRCFile}
	fSecret   = feature{need("key|token|password|passphrase|credential|seed|mnemonic|phrase|cookie|wallet|environment variable|env var|secret|2fa|otp|one-time|one time|credit card|social security|details|number|info|data"), reSecretWord}
	fDestroy  = feature{need("drop |truncate|delete from|rm -|format |mkfs|dd if|shred|wipefs"), re(`\b(?:drop (?:table|database|schema|collection)|truncate (?:table )?\w+|delete from \w+|rm -[a-z]*[rf]|mkfs\S*|dd if=|shred|wipefs|format [a-z]:)`)}
	fPersonal = feature{need("location|contact|address book|photos|messages|browsing|calendar|health|gps|whereabouts"), re(`\b(?:user'?s?|device'?s?|their|your|the person'?s)\s+(?:precise |current |exact |home |full )?(?:location|contacts?(?: list)?|address book|photos|messages|browsing history|calendar|health (?:data|records|conditions)|gps|whereabouts)\b`)}
	fURL      = feature{need("://"), reURL}
	fEmail    = feature{need("@"), reEmail}
	fIP       = feature{need("0.|1.|2.|3.|4.|5.|6.|7.|8.|9."), reIP}
	fPhone    = feature{need("+"), rePhone}
)

// sentence is one sentence being checked, with its features found once.
type sentence struct {
	s     string
	found map[*feature]string
}

// find returns f's first match in the sentence ("" for none).
func (x *sentence) find(f *feature) string {
	if m, ok := x.found[f]; ok {
		return m
	}
	m := ""
	if holds(x.s, f.need) {
		m = f.re.FindString(x.s)
	}
	x.found[f] = m
	return m
}

func (x *sentence) has(f *feature) bool { return x.find(f) != "" }

var (
	reNegated = compile(`\b(?:never|not|don't|avoid|stop)\b(?:\s+\S+){0,4}?\s+['"` + "`" + `]?$`)
	reInstead = compile(`\b(?:instead of|rather than|over)\s+(?:the\s+)?['"` + "`" + `]?$`)
)

// checkSentence applies the single rules and the combined rules (a verb
// class with an object class in one sentence) to one sentence.
func (st *scanState) checkSentence(s string, add func(hit)) {
	for _, r := range textRules() {
		if holds(s, r.need) {
			if m := r.re.FindString(s); m != "" {
				add(hit{r.kind, r.weight, clip(m), r.why})
			}
		}
	}
	x := &sentence{s: s, found: map[*feature]string{}}
	ev := clip(s)
	oblig := x.has(&fOblig)

	// another tool named in an obligation to call it, or disparaged
	if oblig && x.has(&fInvoke) || holds(s, needOtherRef) {
		if ref, sibling := st.otherToolRef(s); ref != "" {
			if oblig && x.has(&fInvoke) {
				switch {
				case sibling:
					add(hit{KindInstruction, 0, ev, "makes calling " + ref + ", a tool of the same server, a duty (common in real documentation; a note)"})
				case x.has(&fOrder):
					add(hit{KindInstruction, 2, ev, "makes calling another tool (" + ref + ") a duty before, after or beside this one"})
				default:
					add(hit{KindInstruction, 1, ev, "tells the model to call another tool (" + ref + ")"})
				}
			}
			if i := strings.Index(s, ref); i >= 0 && !sibling {
				switch {
				case reNegated.MatchString(s[:i]):
					add(hit{KindPreference, 2, ev, "tells the model not to use another tool (" + ref + ")"})
				case reInstead.MatchString(s[:i]):
					add(hit{KindPreference, 1, ev, "steers the model from another tool (" + ref + ") to this one"})
				}
			}
		}
	}
	// shell commands: documentation of a shell tool shows commands; an
	// order to run one, or a download piped into a shell, is an attack
	if m := x.find(&fFetchRun); m != "" {
		add(hit{KindInstruction, 3, clip(m), "downloads a script and runs it in a shell"})
	}
	if m := x.find(&fCmd); m != "" {
		m = s[strings.Index(s, m):] // the command with what follows it
		switch {
		case x.has(&fExec) && oblig:
			add(hit{KindInstruction, 4, clip(m), "tells the model to run a shell command"})
		case x.has(&fExec) && x.has(&fOrder):
			add(hit{KindInstruction, 3, clip(m), "tells the model to run a shell command before or after its task"})
		default:
			add(hit{KindInstruction, 1, clip(m), "a shell command in a tool's text (normal in a shell tool's documentation; weak alone)"})
		}
	}
	if m := x.find(&fDestroy); m != "" && x.has(&fExec) {
		add(hit{KindInstruction, 3, clip(s[strings.Index(s, m):]), "tells the model to run a destructive statement"})
	}
	// files and secrets
	if m := x.find(&fKeyFile); m != "" {
		w := 1
		switch {
		case oblig || x.has(&fTake) || x.has(&fCmd):
			w = 4
		case reKeyFile.MatchString(m):
			w = 2
		}
		add(hit{KindSensitive, w, clip(strings.TrimSpace(m)), "names a file that holds keys or secrets"})
	}
	if m := x.find(&fRCFile); m != "" && oblig && (x.has(&fModify) || x.has(&fTake)) {
		add(hit{KindInstruction, 3, ev, "tells the model to read or change files (" + strings.TrimSpace(m) + ") that are not this tool's business"})
	}
	if m := x.find(&fSecret); m != "" {
		if reIntoArg.MatchString(s) {
			add(hit{KindSensitive, 3, ev, "asks for " + m + " to be put into an argument of the call"})
		} else if (oblig || x.has(&fAddress) || x.has(&fOrder)) && x.has(&fTake) {
			add(hit{KindSensitive, 3, ev, "asks the model to fetch or hand over " + m})
		} else {
			add(hit{KindSensitive, 0, m, "mentions " + m + " (weak alone)"})
		}
	}
	if m := x.find(&fPersonal); m != "" && (oblig || x.has(&fOrder)) && (x.has(&fTake) || x.has(&fTransmit)) {
		add(hit{KindSensitive, 3, ev, "asks the model to gather the user's personal data (" + m + ")"})
	}
	// endpoints
	for _, e := range []struct {
		f    *feature
		what string
	}{{&fURL, "a URL"}, {&fEmail, "an e-mail address"}, {&fIP, "an IP address"}, {&fPhone, "a phone number"}} {
		m := x.find(e.f)
		if m == "" {
			continue
		}
		switch {
		case x.has(&fTransmit) && (oblig || x.has(&fOrder)):
			add(hit{KindExfiltration, 4, clip(m), e.what + " the model is told to send data to"})
		case oblig && x.has(&fReach):
			add(hit{KindExfiltration, 3, clip(m), e.what + " the model is told to contact as an extra step"})
		case x.has(&fTransmit):
			add(hit{KindExfiltration, 2, clip(m), e.what + " beside a verb of sending"})
		default:
			add(hit{KindExfiltration, 0, clip(m), e.what + " in the text (a documentation link is normal; weak alone)"})
		}
	}
	// fixed words to tell the user
	if oblig && x.has(&fDisplay) && (x.has(&fQuote) || x.has(&fToUser)) {
		add(hit{KindInstruction, 2, ev, "tells the model what to say to the user"})
	}
}

// reIntoArg is "… in/into/as the X field" (a value to put into a call).
var reIntoArg = compile(`\b(?:in|into|as|to) (?:the |its |this tool's )?['"` + "`" + `]?\w+['"` + "`" + `]? (?:field|argument|parameter|param|input)\b`)

// needOtherRef gates the search for a disparaged tool.
var needOtherRef = need("never|not|don't|avoid|stop|instead|rather|over")
