package consumequeue

import (
	"context"
	"time"
)

// WaitPromotions returns once no promotion is queued or under way, or
// with ctx's error. Promotions run on the promoter's goroutine whenever a
// small queue reaches its promotion point, so the files of a store change
// after the appends that asked for them have returned; a caller that
// needs the directory still (a copy, an inspection, a test comparing
// files) waits here first. Appends made meanwhile may queue more.
func (s *Store) WaitPromotions(ctx context.Context) error {
	p := s.promoter
	for {
		p.mu.Lock()
		idle := len(p.waiting) == 0 && !p.busy
		p.mu.Unlock()
		if idle {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}
