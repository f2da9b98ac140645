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
