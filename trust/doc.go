// Package trust decides how far toolgate trusts what comes from outside:
// the tools its upstream MCP servers bring in (pins of their definitions,
// the poisoning scanner, an external guardrail webhook) and the results of
// every tool (the result check). It imports only tool and schema; the CLI
// wires it into the gateway (mcpclient) and the engine.
//
// # Pins
//
// A tool's pin is the SHA-256 of the canonical JSON (keys sorted, no
// insignificant white space) of every field a model sees: name, title,
// description, input and output schemas with all they nest, annotations
// (Hash). A pin file (Pins, JSON, one per policy: trust.pins) keeps per
// upstream its Identity (the command line and the SHA-256 of the
// executable it starts, and of files its arguments name; or the URL) and
// per tool the pinned definition, who approved it and when, its scan,
// and a Candidate when a different definition waits for approval. It is
// written atomically (a temporary file, 0600, renamed over it) under an
// exclusive flock of a lock file beside it, so that gateways and
// `toolgate trust approve` can share it; a damaged file is an error and
// nothing is trusted. Hashes keeps the SHA-256s Identify took in a file
// of their own between gateway starts, given again only for the very file
// (its device, inode, size, modification and change times) and recorded
// only for a file no one could write unseen while it was hashed (Linux,
// a file system whose keys are the kernel's, a read lease held throughout).
//
// Review compares what the upstreams list with the pins. On first sight
// of an upstream (trust on first use) its identity and every tool the
// scan lets through are pinned. Later a new tool, a changed definition, or
// any tool of an upstream whose identity changed is quarantined: the
// policy's Settings say what it gets (block: not listed, not callable;
// ask: listed, each call asks; warn: audited only) until Approve pins the
// waiting definition. A tool the upstream no longer lists is marked
// removed. Every change is an Event for the audit log.
//
// # Scanner
//
// Scan reads every model-visible string of a definition (name, title,
// description, every string of the input and output schemas, property
// names, annotations) and returns a Report: a verdict (clean, suspicious,
// malicious) and findings that explain themselves (kind, JSON pointer,
// evidence, why, weight). It is deterministic and needs no model. Rules
// are word classes met within one sentence (a verb of sending with an
// address, an obligation with another tool's name, a negation with the
// user), each behind a gate of substrings so that a sentence that cannot
// match costs no regular expression; text is NFKC-folded, invisible
// characters are dropped and look-alike letters folded before the rules
// read it. The verdict is the sum of the findings' weights: 4 or more is
// malicious, 2 or 3 suspicious. ScanSet and ScanUpstreams scan tools the
// model sees together, each with the others (and the server names) as
// context: references to another server's tools and near collisions of
// names (look-alike letters, case, a version added) are findings, given to
// the side that looks like the copy. Tools are scanned when first seen or
// changed.
//
// # Results
//
// CheckResult reads what a model would read of an upstream's result (text
// blocks, embedded resources' text, every string and key of structured
// content, an error's message and suggestion) and returns Findings of the
// shapes of an injection: fake turns and authors, fake errors that give
// orders, orders to call tools, send data or hand over secrets, other
// orders addressed to the model, hidden characters. Each sentence scores
// cues of being addressed to the model, of what it wants done and of how
// injections frame it; it is a finding when they add up and one of them
// addresses the model. ResultCheck is the engine's result checker
// (engine.Options.ResultChecker): the engine runs it on every tool's
// result, built in, an upstream's or a library's, after the tool and
// before the output budget. It applies the policy, per tool (ModeFor), to
// a flagged result: mark (a note, and each flagged string between two
// lines with a per-call random boundary the content cannot forge; the
// rest as it was, structured content keeping its shape), block
// (permission_denied, without the text) or off; the kinds found ride in
// Result.Meta[FlaggedMeta] to the audit record, and the JSON pointers of
// the flagged parts in Meta[FlaggedFieldsMeta]. A result with no finding
// is returned as it came, never encoded again.
//
// The check runs on every result a tool gives, so it reads a sentence
// once for the literals of all cues (one Aho-Corasick pass; a sentence is
// read first for those of the cues that address the model, the states
// that end them numbered last so that a step tells them) and runs a
// cue's expression only when the sentence holds what every match of it
// needs (a prefilter derived from the expression, at development time:
// result_prefilters.go, kept current by a test, and one of the strings a
// match may begin with) and the cue can still change the outcome: of the
// cues that may, it asks first those that rule a finding out for the least
// work, an expression not compiled yet counting its compiling (an
// anchored one never is: its program is data, run by a matcher of its own;
// a process's first check of prose compiles none). Before the sentences,
// the whole text is read for
// the same literals (four quarters at once, the automaton's states marked,
// their literals gathered after): when the cues that may hold anywhere in
// it cannot add up to a finding, with the frame of a sentence before only
// where one may frame (a framing cue, a colon ending a line), no sentence
// is read: most data (file contents, logs, listings, JSON) stops there.
// ASCII text with single blanks is read as it is, sixteen bytes at a time
// to tell. Before all that, a small automaton of the words without which
// no cue that addresses the model may hold (and of the bytes folding
// changes) reads the text until it meets one, passing eight bytes at a time
// where none can begin: data of digits and signs (a counter's output,
// numbers, hashes) stops there, no finding possible. A small file costs
// about 10 µs. The automaton, the tables of
// what each cue needs of its literals and the expressions anchored where a
// match may start (their programs, as regexp/syntax compiles them) are
// derived from the cues at development time and kept
// as data (result_index.go, result_prefilters.go; a test regenerates them
// and fails when they differ): a program builds nothing at its first
// check. Once a process has read a MiB of long texts, it lays the
// automaton out by bytes (512 KB, made once, about 0.5 ms) for a faster
// scan: a short process reading one long result never pays for it. A test keeps the check as first written and compares the two on
// the corpora, on random texts and under fuzzing.
//
// # Webhook
//
// Webhook.Wrap asks an external HTTP service about each call (before it
// runs) and each result (before the model sees it); it answers allow,
// deny with a reason, or modify (new arguments, a new result). Anything
// else, a timeout, a non-2xx status or an answer over MaxWebhookResponse
// denies, unless AllowOnError. With a Secret, requests are signed as
// Standard Webhooks specifies.
package trust
