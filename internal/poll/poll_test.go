package poll

import (
	"errors"
	"testing"
)

func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	calls := 0
	Until(t, "the third call", func() error {
		calls++
		if calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if calls != 3 {
		t.Fatalf("cond called %d times, want 3", calls)
	}
}

func TestTrueReturnsOnceTheConditionHolds(t *testing.T) {
	calls := 0
	True(t, "the second call", func() bool {
		calls++
		return calls == 2
	})
	if calls != 2 {
		t.Fatalf("cond called %d times, want 2", calls)
	}
}
