package dense

import "testing"

func TestTable(t *testing.T) {
	var tab Table[int64]
	// A pointer handed out stays the partition's while the table grows
	// past it.
	first := tab.Ptr(3)
	*first = 7
	for _, p := range []int32{0, blockSize - 1, blockSize, 5*blockSize + 1, 99_999} {
		*tab.Ptr(p) = int64(p) + 100
	}
	if first != tab.Ptr(3) {
		t.Fatal("partition 3's value moved when the table grew")
	}
	for _, c := range []struct {
		p    int32
		want int64
	}{
		{3, 7},
		{0, 100},
		{blockSize - 1, blockSize + 99},
		{blockSize, blockSize + 100},
		{5*blockSize + 1, 5*blockSize + 101},
		{99_999, 100_099},
		{4, 0},             // in an allocated block, never set
		{2 * blockSize, 0}, // in a block never allocated
		{1 << 30, 0},       // past the table
	} {
		if got := tab.Get(c.p); got != c.want {
			t.Errorf("Get(%d) = %d, want %d", c.p, got, c.want)
		}
	}
	if len(tab.blocks) != 99_999/blockSize+1 {
		t.Errorf("%d blocks, want %d", len(tab.blocks), 99_999/blockSize+1)
	}
}

func TestTableAll(t *testing.T) {
	var tab Table[int64]
	set := []int32{2, blockSize + 1, 3 * blockSize}
	for _, p := range set {
		*tab.Ptr(p) = int64(p) + 1
	}
	var got []int32
	slots := 0
	for p, v := range tab.All() {
		slots++
		if *v != 0 {
			got = append(got, p)
			if *v != int64(p)+1 {
				t.Errorf("partition %d holds %d", p, *v)
			}
		}
	}
	// Blocks 0, 1 and 3 are allocated, block 2 is not.
	if slots != 3*blockSize || len(got) != len(set) || got[0] != set[0] || got[1] != set[1] || got[2] != set[2] {
		t.Fatalf("%d slots, set %v, want %d and %v", slots, got, 3*blockSize, set)
	}
	// Go panics if an iterator yields again after its loop broke.
	for range tab.All() {
		break
	}
}
