package policy

import (
	"context"
	"time"
)

// SandboxMap keeps, for the remote sandboxes of the policy's sandbox block
// (package sandboxes), which sandbox each id (the hash of a principal and
// a conversation) has and where it answers, its last use, the lease under
// which one replica at a time makes, places or deletes it, and the
// reaper's lock. The store package's RedisSandboxes keeps it in the
// state.redis the replicas share; package sandboxes has one in a
// process's memory.
type SandboxMap interface {
	// Get returns the entry of id; ok is false when there is none.
	Get(ctx context.Context, id string) (e SandboxEntry, ok bool, err error)
	// Put writes the entry of e.ID.
	Put(ctx context.Context, e SandboxEntry) error
	// Touch records a use of id at t (a later use never moves it back);
	// live is false when id has no entry or its entry is gone.
	Touch(ctx context.Context, id string, t time.Time) (live bool, err error)
	// Idle returns the entries not gone whose last use is before t.
	Idle(ctx context.Context, t time.Time) ([]SandboxEntry, error)
	// Retire marks the entry of id gone, in one step, if it is not gone
	// and its last use is before t: a use recorded meanwhile keeps it.
	// It returns the entry as it was and whether it was retired.
	Retire(ctx context.Context, id string, t time.Time) (e SandboxEntry, ok bool, err error)
	// Lock takes the lock name for ttl unless another holds it: ok says
	// whether it was taken; release gives it back (a no-op once ttl has
	// passed and another holds it).
	Lock(ctx context.Context, name string, ttl time.Duration) (release func(), ok bool, err error)
}

// SandboxEntry is what a SandboxMap keeps of one sandbox: where it
// answers, when it was made and last called, and whether it was deleted
// (then the next call of its key makes it anew and says so).
type SandboxEntry struct {
	ID       string
	Endpoint string
	Created  time.Time
	Last     time.Time
	Gone     bool
}
