package sandboxes

import (
	"context"
	"time"

	"github.com/toolgate/toolgate/runner"
)

// reapEvery is how often Reaper looks for idle sandboxes: a quarter of
// Idle, between 1 second and 5 minutes.
func (s *Sandboxes) reapEvery() time.Duration {
	return min(max(s.o.Idle/4, time.Second), 5*time.Minute)
}

// Reap deletes, once, the sandboxes that had no call for Idle, if this
// replica takes the reaper's lock (another replica holding it is reaping:
// Reap then does nothing). It returns the ids deleted. A deleted
// sandbox's entry stays, marked gone, so that the next call of its key
// makes it anew and says so.
//
// Each sandbox is deleted under its lease (the one a call takes to make or
// find it; one being made or found is left to the next pass), after its
// entry is retired in one step of the map only if it is still idle (a
// call recorded meanwhile keeps it), at the endpoint its entry names. A
// delete that fails puts the entry back, for the next pass.
func (s *Sandboxes) Reap(ctx context.Context) ([]string, error) {
	if s.o.Idle <= 0 {
		return nil, nil
	}
	release, ok, err := s.o.State.Lock(ctx, "reaper", s.reapEvery()+time.Minute)
	if err != nil || !ok {
		return nil, err
	}
	defer release()
	before := time.Now().Add(-s.o.Idle)
	idle, err := s.o.State.Idle(ctx, before)
	if err != nil {
		return nil, err
	}
	var deleted []string
	for _, e := range idle {
		gone, err := s.reap(ctx, e.ID, before)
		if err != nil {
			return deleted, err
		}
		if gone {
			deleted = append(deleted, e.ID)
		}
	}
	return deleted, nil
}

// reap deletes sandbox id if it is still idle since before, under its
// lease; it says whether it did.
func (s *Sandboxes) reap(ctx context.Context, id string, before time.Time) (bool, error) {
	release, ok, err := s.o.State.Lock(ctx, "create:"+id, s.o.EnsureTimeout+30*time.Second)
	if err != nil || !ok {
		return false, err // being made or found now: not idle
	}
	defer release()
	e, ok, err := s.o.State.Retire(ctx, id, before)
	if err != nil || !ok {
		return false, err
	}
	s.dropID(id)
	kept, err := s.delete(ctx, id, e.Endpoint)
	s.tellDeleted(id, kept)
	if err != nil {
		s.log.Warn("deleting an idle sandbox failed; the next pass tries again", "sandbox", id, "err", err)
		return false, s.o.State.Put(ctx, e) // as it was: idle, not gone
	}
	s.log.Info("idle sandbox deleted", "sandbox", id, "last_call", e.Last)
	return true, nil
}

// tellDeleted tells the process events kept (nil: none) that the deleted
// sandbox id's runner sent back, those after its last call and the ends
// of the processes the delete stopped, as a result would have, with the
// principal and session of the last call that told its events on this
// replica (none known: empty); then forgets what was told of it.
func (s *Sandboxes) tellDeleted(id string, kept *runner.ProcessEvents) {
	s.mu.Lock()
	fn := s.events
	s.mu.Unlock()
	s.evmu.Lock()
	defer s.evmu.Unlock()
	if fn != nil && kept != nil {
		a := s.acked[id]
		s.told(fn, a.owner, a, *kept)
	}
	delete(s.acked, id) // its events go with it
}

// delete is Backend.Delete, at the endpoint the map has when the backend
// is relocating, or KeptDeleter.DeleteKept; a runner's answer may carry
// the sandbox's process events that no result carried.
func (s *Sandboxes) delete(ctx context.Context, id, endpoint string) (*runner.ProcessEvents, error) {
	switch b := s.o.Backend.(type) {
	case relocating:
		return b.deleteAt(ctx, id, endpoint)
	case KeptDeleter:
		return b.DeleteKept(ctx, id)
	}
	return nil, s.o.Backend.Delete(ctx, id)
}

// Reaper runs Reap every quarter of Idle until ctx ends (nothing without
// Idle). Every replica runs one; the lock lets one at a time reap.
func (s *Sandboxes) Reaper(ctx context.Context) {
	if s.o.Idle <= 0 {
		return
	}
	t := time.NewTicker(s.reapEvery())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := s.Reap(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("reaping idle sandboxes failed", "err", err)
			}
		}
	}
}
