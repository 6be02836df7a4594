package sandboxes

import (
	"context"
	"time"
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
func (s *Sandboxes) Reap(ctx context.Context) ([]string, error) {
	if s.o.Idle <= 0 {
		return nil, nil
	}
	release, ok, err := s.o.State.Lock(ctx, "reaper", s.reapEvery()+time.Minute)
	if err != nil || !ok {
		return nil, err
	}
	defer release()
	idle, err := s.o.State.Idle(ctx, time.Now().Add(-s.o.Idle))
	if err != nil {
		return nil, err
	}
	var deleted []string
	for _, e := range idle {
		if err := s.o.Backend.Delete(ctx, e.ID); err != nil {
			s.log.Warn("deleting an idle sandbox failed; the next pass tries again", "sandbox", e.ID, "err", err)
			continue
		}
		e.Gone = true
		if err := s.o.State.Put(ctx, e); err != nil {
			return deleted, err
		}
		s.dropID(e.ID)
		deleted = append(deleted, e.ID)
		s.log.Info("idle sandbox deleted", "sandbox", e.ID, "last_call", e.Last)
	}
	return deleted, nil
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
