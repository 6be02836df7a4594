// Package store keeps the results of calls by idempotency key, so that a
// retried call returns the result of the first attempt instead of running
// twice — even after the process restarts.
//
// A Store is a small key-value interface with expiry; Memory keeps entries
// in the process, Bolt in an embedded bbolt file (the default, under the
// state folder), and a Redis implementation can satisfy the same interface
// for several processes. Idempotency puts a Store in front of calls: the
// first call with a key runs, a concurrent duplicate waits for it, and later
// ones get the recorded result.
package store
