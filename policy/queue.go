package policy

import (
	"context"
	"fmt"
	"io/fs"
	"sync"
	"time"
)

// ApprovalQueue is where the calls waiting for a person are kept, so that
// an approvals page can list and answer them: in this process
// (NewMemoryQueue, QueueApprover's default) or in a store that several
// replicas share, so that a call asked on one replica is answered through
// the page of any other (the store package's RedisApprovals).
//
// Entries and answers are opaque bytes to a queue (QueueApprover writes
// JSON: the call as shown to a person, secrets redacted; an Approval). A
// queue's errors wrap fs.ErrNotExist when nothing waits under an id and
// fs.ErrExist when it was answered already; any other error means the
// queue cannot be reached.
type ApprovalQueue interface {
	// Wait puts entry under id for at most ttl and waits for its answer.
	// When ctx ends first, the entry is withdrawn and ctx's error returned,
	// unless an answer arrived meanwhile: then that answer.
	Wait(ctx context.Context, id string, entry []byte, ttl time.Duration) (answer []byte, err error)
	// List returns the entries waiting, in no particular order.
	List(ctx context.Context) ([][]byte, error)
	// Get returns the entry waiting under id.
	Get(ctx context.Context, id string) ([]byte, error)
	// Answer answers the entry under id: the first answer wins, once.
	Answer(ctx context.Context, id string, answer []byte) error
}

// NewMemoryQueue returns an ApprovalQueue in this process.
func NewMemoryQueue() ApprovalQueue {
	return &memoryQueue{waiting: map[string]*memoryEntry{}, answered: map[string]time.Time{}}
}

type memoryQueue struct {
	mu       sync.Mutex
	waiting  map[string]*memoryEntry
	answered map[string]time.Time // id → until when a second answer is told it came late
}

type memoryEntry struct {
	entry   []byte
	expires time.Time
	answer  chan []byte // buffered: Answer never blocks
}

func (q *memoryQueue) Wait(ctx context.Context, id string, entry []byte, ttl time.Duration) ([]byte, error) {
	e := &memoryEntry{entry: entry, expires: time.Now().Add(ttl), answer: make(chan []byte, 1)}
	q.mu.Lock()
	if _, dup := q.waiting[id]; dup {
		q.mu.Unlock()
		return nil, fmt.Errorf("policy: an approval with id %q is waiting already: %w", id, fs.ErrExist)
	}
	q.waiting[id] = e
	q.mu.Unlock()
	timer := time.NewTimer(ttl)
	defer timer.Stop()
	select {
	case a := <-e.answer:
		return a, nil
	case <-ctx.Done():
	case <-timer.C:
	}
	q.mu.Lock()
	delete(q.waiting, id)
	q.mu.Unlock()
	select {
	case a := <-e.answer: // answered just as the wait ended
		return a, nil
	default:
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, fmt.Errorf("policy: no answer within %s: %w", ttl, context.DeadlineExceeded)
}

func (q *memoryQueue) List(context.Context) ([][]byte, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([][]byte, 0, len(q.waiting))
	for _, e := range q.waiting {
		out = append(out, e.entry)
	}
	return out, nil
}

func (q *memoryQueue) Get(_ context.Context, id string) ([]byte, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if e := q.waiting[id]; e != nil {
		return e.entry, nil
	}
	return nil, q.missing(id)
}

func (q *memoryQueue) Answer(_ context.Context, id string, answer []byte) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	e := q.waiting[id]
	if e == nil {
		return q.missing(id)
	}
	delete(q.waiting, id)
	now := time.Now()
	for k, until := range q.answered {
		if now.After(until) {
			delete(q.answered, k)
		}
	}
	q.answered[id] = e.expires
	e.answer <- answer
	return nil
}

// missing is the error for an id that waits no more (q.mu held).
func (q *memoryQueue) missing(id string) error {
	if until, ok := q.answered[id]; ok && time.Now().Before(until) {
		return fmt.Errorf("policy: approval %q: %w", id, fs.ErrExist)
	}
	return fmt.Errorf("policy: approval %q: %w", id, fs.ErrNotExist)
}
