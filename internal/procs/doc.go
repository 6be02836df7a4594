// Package procs runs a process's Go code on one processor, and gives the
// others back to work that fans out while it runs.
//
// A server over stdio answers one client whose calls are small and mostly
// one at a time: a call hops between a few goroutines (the transport, the
// engine's worker, the writer), and with more than one processor (P) each
// hop can wake another thread, which costs more CPU than the call's own
// work (bench/mcp: 30–40% of toolgate serve's CPU per call). With one P a
// hop is a goroutine switch on the same thread. Work that truly runs in
// parallel (a search over a large tree) asks for the processors back with
// [Widen] for as long as it runs (the CLI gives Widen to the file tools as
// fs.Options.Parallel).
//
// A server over HTTP serves many clients: a [Demand] counts the requests
// its caller begins and ends and holds a Widen while they overlap, so the
// server runs on one processor while they come one at a time (one
// client's calls) and on all of them under concurrent calls, changing at
// most as often as its Calm allows. Which requests count is the caller's
// rule (the CLI counts the calls to its MCP endpoint, not a session's
// idle GET stream).
//
// [Narrow] leaves the process as it is when the GOMAXPROCS environment
// variable is set: the user's choice wins. Without a Narrow, Widen does
// nothing, so library users and one-shot commands keep Go's default.
package procs
