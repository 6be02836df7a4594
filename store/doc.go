// Package store keeps the results of calls by idempotency key, so that a
// retried call returns the result of the first attempt instead of running
// twice — even after the process restarts, and across replicas.
//
// A Store is a small key-value interface with expiry; Memory keeps entries
// in the process, Bolt in an embedded bbolt file (the default, under the
// state folder), and Redis in a Redis server several processes share.
// Idempotency puts a Store in front of calls: the first call with a key
// runs, a concurrent duplicate waits for it, and later ones get the
// recorded result.
//
// Over Redis (a Claimer) a process claims a key (SET NX with the result's
// TTL, and a lease it renews while the call runs) before the call runs; a
// duplicate arriving at another replica polls, with a bounded back-off,
// until the result is recorded and gets it. A claim whose owner died (its
// lease expired, no result) is reported as a conflict, to that duplicate
// and every later call with the key, never run again silently. A retryable
// failure drops the claim so that a retry runs. Redis unreachable: the call
// is refused as unavailable (retryable), never run unguarded. Keys are
// stored as SHA-256 digests under a prefix; a Redis restarted without
// persistence forgets its claims and results.
//
// RedisApprovals is the other thing replicas share here: the queue of calls
// waiting for a person (policy.ApprovalQueue, declared where it is used),
// so that the approvals page of any replica lists and answers a call held
// by another; the first answer wins, in one script, and reaches the holder
// by pub/sub and by a bounded poll.
//
// RedisLimits is the third: policy.LimitStore, the rate buckets, loop
// guard and breaker streaks of the replicas' Limiters and Breakers
// (NewShared makes the policy.Shared of a state.redis block, NewClient its
// client). A call's admission is one Lua script on Redis's clock, atomic
// across replicas, in few commands and fewer writes: one MGET reads the
// call's failure (a key Redis expires at the end of its window) and every
// bucket; a caller's history is one hash, a ring of its last calls with a
// count per call key.
//
// RedisProcesses is the fourth: policy.ProcessBoard, the entries of the
// replicas' processes (package exec's start_process) and the last of their
// output, under a lease per replica; a reader that finds a running entry
// whose lease lapsed marks it lost, in one script, for good.
//
// RedisSandboxes is the fifth: policy.SandboxMap, which sandbox each
// conversation of a remote sandbox backend has (package sandboxes), its
// last use and its lease; retiring an idle entry is one script, so that a
// use recorded meanwhile keeps it. Its lease and RedisBlobs' lock are the
// same lock (a token per holder, released only by it).
package store
