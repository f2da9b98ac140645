package controlplane

import "testing"

// TestPartitionEpochUnder: a partition's epoch is its group's lease epoch
// above the base its moves set; a negative base counts as none.
func TestPartitionEpochUnder(t *testing.T) {
	for _, tc := range []struct {
		base  int64
		lease uint64
		want  uint64
	}{
		{0, 7, 7},
		{5, 7, 12},
		{-3, 7, 7},
	} {
		if got := (PartitionEpoch{Base: tc.base}).Under(tc.lease); got != tc.want {
			t.Errorf("base %d under lease %d: %d, want %d", tc.base, tc.lease, got, tc.want)
		}
	}
}
