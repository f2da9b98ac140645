package dense

import (
	"sync"
	"testing"
)

func TestShared(t *testing.T) {
	var tab Shared[int]
	if tab.Load(5) != nil {
		t.Fatal("an empty table holds partition 5")
	}
	one, two := 1, 2
	if got := tab.LoadOrStore(5, &one); got != &one {
		t.Fatal("the first store did not keep its value")
	}
	if got := tab.LoadOrStore(5, &two); got != &one {
		t.Fatal("a second store replaced the first")
	}
	if got := tab.LoadOrStore(3*blockSize, &two); got != &two || tab.Load(3*blockSize) != &two {
		t.Fatal("a store into a new block was lost")
	}
	if tab.Load(5) != &one || tab.Load(6) != nil || tab.Load(2*blockSize) != nil || tab.Load(1<<30) != nil {
		t.Fatal("growing the table changed what it held")
	}
}

// TestSharedConcurrent stores from many goroutines at once (run it with
// -race): every partition ends up with one pointer, the one all its
// stores returned.
func TestSharedConcurrent(t *testing.T) {
	var tab Shared[int32]
	const parts = 4 * blockSize
	got := make([][parts]*int32, 4)
	var wg sync.WaitGroup
	for g := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := int32(parts - 1); p >= 0; p-- {
				v := p
				got[g][p] = tab.LoadOrStore(p, &v)
				_ = tab.Load(p / 2)
			}
		}()
	}
	wg.Wait()
	for p := range int32(parts) {
		want := tab.Load(p)
		if want == nil || *want != p {
			t.Fatalf("partition %d holds %v", p, want)
		}
		for g := range got {
			if got[g][p] != want {
				t.Fatalf("partition %d: goroutine %d got another pointer", p, g)
			}
		}
	}
}
