// Package policy decides whether a call may run: allow, ask a human (through
// an Approver), or deny. A decision combines the mode (default, read-only,
// accept-edits, bypass), rules evaluated deny → ask → allow where the first
// match wins, and the tool's permission level (0 runs, 1 runs and is logged,
// 2 asks, 3 asks for an explicit confirmation).
//
// Rules here name tools by glob ("read_*", "github__*"); the full
// Tool(specifier) grammar over paths, commands and domains builds on them.
// Every Decision names the rule or the level behind it, for the audit log.
package policy
