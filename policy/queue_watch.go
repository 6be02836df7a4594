package policy

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// PendingCall is a call waiting for a person, as the approval page shows
// it and a queue holds it: its arguments and texts with secrets redacted.
// Its fields: ID, Tool, Arguments (JSON), Pretty (indented, cut), Rule,
// Reason (why it asks), Level, Confirm (level 3: approved once, typing
// the tool's name), AlwaysRules (what "always" adds), Session, Principal,
// Since, Replica.
type PendingCall = pendingView

// Pending returns the calls waiting for a decision, oldest first; the
// error says a shared queue cannot be read (this process's calls are
// listed all the same).
func (h *HTTPApprover) Pending(ctx context.Context) ([]PendingCall, error) {
	return h.list(ctx)
}

// DecideError is why Decide refused a decision: Status is the HTTP status
// that says it (400 a decision that does not fit the call, 404 no such call
// waits, 409 answered already, 503 the shared queue is down).
type DecideError struct {
	Status  int
	Message string
}

func (e *DecideError) Error() string { return e.Message }

// Decide answers the waiting call id, as the page does, on behalf of by
// (recorded as the approver in the audit log): decision is once, session,
// always or deny; reason goes back to the model; confirm is the tool's name
// or "yes" for a level-3 call.
func (h *HTTPApprover) Decide(ctx context.Context, id, decision, reason, confirm, by string) error {
	if code, msg := h.decide(ctx, id, decision, reason, confirm, by); code != http.StatusOK {
		return &DecideError{Status: code, Message: msg}
	}
	return nil
}

// WatchedQueue is an ApprovalQueue that tells its subscribers when this
// process puts, answers or withdraws an entry, so that a page can show the
// queue live. Changes made by other replicas of a shared queue are not
// seen: a subscriber looks again now and then as well.
type WatchedQueue struct {
	ApprovalQueue
	mu   sync.Mutex
	subs map[chan struct{}]struct{}
}

// Watch returns q with change notifications.
func Watch(q ApprovalQueue) *WatchedQueue {
	return &WatchedQueue{ApprovalQueue: q, subs: map[chan struct{}]struct{}{}}
}

// Subscribe returns a channel that receives a value after changes (one
// value may stand for several), and the function that ends the
// subscription.
func (w *WatchedQueue) Subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	w.subs[ch] = struct{}{}
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		delete(w.subs, ch)
		w.mu.Unlock()
	}
}

func (w *WatchedQueue) notify() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Wait notifies as the entry is put (the queue lists it within moments:
// a subscriber looks again shortly after) and as its wait ends.
func (w *WatchedQueue) Wait(ctx context.Context, id string, entry []byte, ttl time.Duration) ([]byte, error) {
	w.notify()
	defer w.notify()
	return w.ApprovalQueue.Wait(ctx, id, entry, ttl)
}

// Answer notifies after an answer.
func (w *WatchedQueue) Answer(ctx context.Context, id string, answer []byte) error {
	err := w.ApprovalQueue.Answer(ctx, id, answer)
	w.notify()
	return err
}
