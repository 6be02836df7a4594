// Package audit keeps toolgate's audit log: an append-only JSON Lines file
// with one hash-chained Record per decision about a call (allowed, denied or
// invalid), so that a modified, removed, inserted or reordered record is
// found by Verify and named with its line number.
//
// # Format
//
// Each line is one JSON object followed by "\n". Its members always appear,
// all of them, in this order:
//
//	time         string  RFC 3339 with nanoseconds, UTC ("2026-01-02T15:04:05.123456789Z")
//	call_id      string
//	session      string
//	principal    string
//	auth         object  the credential: {"kind":"jwt","issuer":…,"jti":…}, {"kind":"api_key","key":<8 hex digits>} or {"kind":"local"}
//	tool         string
//	arguments    JSON    compact; long strings and large arguments as {"sha256":"…","len":N}
//	decision     string  "allow", "deny", "ask", …
//	rule         string  the rule or reason that made the decision
//	mode         string
//	approver     string
//	scope        string
//	duration_ms  number  milliseconds, microsecond precision
//	outcome      string  "ok", "error", "denied", "invalid"
//	error_type   string
//	prev_hash    string  64 lowercase hex digits
//	hash         string  64 lowercase hex digits
//
// For example (one line):
//
//	{"time":"2026-01-02T15:04:05.5Z","call_id":"c1","session":"s1","principal":"alice","auth":{"kind":"local"},"tool":"read_file","arguments":{"path":"a.txt"},"decision":"allow","rule":"Read(*)","mode":"default","approver":"","scope":"","duration_ms":1.25,"outcome":"ok","error_type":"","prev_hash":"0000…0000","hash":"9f2c…e1"}
//
// Arguments are written compactly (no white space outside strings). A string
// value (not an object key) longer than MaxStringLen (256) bytes, once
// decoded, is replaced by {"sha256":"<hex SHA-256 of its UTF-8 bytes>",
// "len":<its length in bytes>}; when the arguments are still longer than
// MaxArgumentsLen (4096) bytes they are replaced as a whole by the same kind
// of object computed over the argument bytes exactly as the caller gave them.
// Arguments that are not JSON at all (a malformed call is logged too) are
// written as a JSON string when they are valid UTF-8 of at most 256 bytes,
// otherwise as their digest; empty arguments as null.
//
// # Hash rule
//
// A record's hash is the SHA-256, in lowercase hex, of its line as written
// but with the value of "hash" empty: the line's bytes without the newline
// and without the 64 hex digits between `"hash":"` and the closing `"}`.
// prev_hash is the hash of the record on the line before; the first record's
// prev_hash is GenesisHash, 64 zeros. Because the hash covers the exact bytes
// on the line, an outside tool recomputes it without a JSON library:
//
//	line=$(sed -n 5p audit.jsonl)
//	printf '%s' "$line" | sed -E 's/"hash":"[0-9a-f]{64}"}$/"hash":""}/' | sha256sum
//
// and compares the result with the line's "hash" and the next line's
// "prev_hash".
//
// A hash chain detects changes, not a rewrite of the whole chain from the
// point of change, nor records cut off the end: keep Report.Head (or the
// Log's Head) somewhere else, e.g. in a later run's log or a ticket, to pin
// the log's content up to that point.
//
// # Writing
//
// Open opens a log append-only with mode 0600 and refuses symbolic links and
// files other users can read. Log.Append writes each record with one
// write(2) under an exclusive flock(2), so goroutines and separate processes
// can append to one file without forking the chain or interleaving lines.
// A Log keeps the lock between appends, so that the common case, one
// process writing its log, costs one write(2) per record; it lets the lock
// go within about a millisecond once it is idle (at once, after an append
// that itself came after such a pause) or another writer waits for it (on
// Linux a waiting writer raises a flag: an open file description
// lock on a byte far past the end of the file; elsewhere the lock is taken
// and let go around each append), and then lets that writer go first.
// Whenever it takes the lock again it checks the file's size and, when
// another process appended, reads the new last record before chaining onto
// it. A process stopped (SIGSTOP) right after an append holds the lock
// until it continues. A process that must be the only writer can open the
// log with Options.Exclusive: it keeps the lock until Close, whoever
// waits. Denials are flushed to disk before Append returns,
// everything else within Options.SyncInterval. After a crash a torn last
// line stays where it is: the next record starts on a new line and chains
// onto the last complete record, and Verify reports the torn line as a
// warning without hiding the rest.
//
// # Reading
//
// Verify checks a whole log in one streaming pass. Tail reads the last
// records of a log from its end; Select streams a log through a Query.
// Neither Tail nor Select checks hashes.
//
// The package is written by hand on the standard library (and
// golang.org/x/sys for the waiting flag): the writer avoids reflection to
// keep Append close to the cost of its one write(2). It checks arguments
// and compacts them in one pass that accepts exactly what json.Valid
// accepts; its output is checked byte for byte against encoding/json's
// checker and the former encoder by differential tests and fuzz targets.
package audit
