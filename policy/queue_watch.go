package policy

import (
	"context"
	"sync"
	"time"
)

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
