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
// starts with; Guarded holds the CI definitions (CIPaths), asked about
// before a tool changes one unless an allow rule names the path.
// ConfigPaths names the configuration other programs read at a
// workspace's top; NestedConfigPaths, reading through an os.Root, names
// the one they read in the folders below it and in the package folders
// it declares (package.json's workspaces and the like), and
// FolderConfigPaths the one of a single folder (where a link from another
// workspace leads), for the sandboxes to guard. Every
// Decision names the rule, mode and level behind it, for the audit log.
//
// A policy is built in code (Default) or read from a toolgate.yaml file
// (Parse, Load; see testdata/toolgate.example.yaml and toolgate.schema.json)
// that also carries the limits, approvals, output and secrets sections.
//
// Approvers answer the calls the policy asks about: Terminal (a TTY that is
// not the MCP channel), Elicitation (the MCP client's user), QueueApprover
// (the approvals page of package console, through a queue) and ApproverFunc (a callback). Gate wraps
// any of them with session memory, "always" rules written to the policy
// file, a timeout and the denial streak. Limiter enforces rate limits,
// concurrency caps and the loop guard; Breaker stops a session whose calls
// are refused again and again; Redactor removes secrets.
//
// Several replicas share one set of limits through Shared, given to the
// Limiter and the Breaker of each: a LimitStore, an interface declared
// here and implemented in this process (MemoryLimits, the reference) or
// over Redis (the store package's RedisLimits, made from the policy's
// state.redis block). One Admit decides a call: the buckets (per tool, per
// principal, per tool and principal) are GCRA, every bucket of a call
// checked and a token taken from each or from none, with the local
// buckets' burst, refill and retry_after; the loop guard's history and
// failures and the breaker's streaks are kept by principal and
// conversation (tool.Call.Caller) and give the same verdict on the same
// call as one process would. The concurrency cap stays per process. While
// the store cannot be reached, on_error deny refuses calls as unavailable
// (retryable, with a retry hint) and allow falls back to the process's own
// limits; either way the outage and its end are logged once, and recovery
// needs no restart. This package knows no Redis client. ProcessBoard, declared
// here too, is where replicas tell each other of the processes package exec
// runs (the store package's RedisProcesses), and SandboxMap where they
// keep which remote sandbox each conversation has (RedisSandboxes).
//
// Replicas share their approvals too. QueueApprover keeps the calls waiting
// for a person in an ApprovalQueue, an interface declared here and
// implemented in this process (NewMemoryQueue) or over Redis (the store
// package's RedisApprovals), so the page of any replica lists the calls of
// all and answers any of them, once (a second answer is 409, an id that
// waits no more 404), and the answer reaches the replica holding the call.
// A queue holds the call as shown to a person, secrets redacted, never the
// call itself. A queue that cannot be reached makes an asked call
// unavailable (retryable) under on_error deny, and asks on the local page
// under allow. Clients that retry a call with the answer instead of being
// asked during it (MCP 2026-07-28 input requests) are asked by
// InputRequests: the question goes back as a tool.Error of type
// input_required with a requestState that StateSealer seals, bound to
// principal, tool and a digest of the arguments, short-lived, and usable
// once through a OnceStore.
package policy
