// Package policy decides whether a call may run: allow, ask a human (through
// an Approver), or deny. A decision combines the mode (default, read-only
// or plan, accept-edits, bypass where deny rules still win), rules
// evaluated deny → ask → allow where the first match wins, the principal's
// role, and the tool's level (by default 0 runs, 1 runs and is logged, 2
// asks, 3 asks for an explicit confirmation or an admin).
//
// Rules are written Tool(specifier): a tool-name glob ("github__*") or an
// alias (Read, Edit, Bash, WebFetch), and a command pattern
// ("Bash(npm run test:*)"), a domain ("WebFetch(domain:*.example.com)") or
// gitignore-style path patterns ("Edit(src/**, !src/gen/**)"). Command
// lines are parsed as bash (mvdan.cc/sh): an allow rule must match every
// simple command of a compound line, a deny rule any one, wrappers such as
// env, timeout and xargs are seen through, strings given to bash -c and
// eval are parsed in turn, and what is only known at run time is never
// allowed by a rule. DefaultDeny holds the protected paths every policy
// starts with. Every Decision names the rule, mode and level behind it, for
// the audit log.
//
// A policy is built in code (Default) or read from a toolgate.yaml file
// (Parse, Load; see testdata/toolgate.example.yaml and toolgate.schema.json)
// that also carries the limits, approvals, output and secrets sections.
//
// Approvers answer the calls the policy asks about: Terminal (a TTY that is
// not the MCP channel), Elicitation (the MCP client's user), HTTPApprover
// (a local web page and JSON API) and ApproverFunc (a callback). Gate wraps
// any of them with session memory, "always" rules written to the policy
// file, a timeout and the denial streak. Limiter enforces rate limits,
// concurrency caps and the loop guard; Breaker stops a session whose calls
// are refused again and again; Redactor removes secrets.
package policy
