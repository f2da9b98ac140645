package bench

import "testing"

func TestPartitionList(t *testing.T) {
	for _, tc := range []struct {
		counts []int
		want   string
	}{
		{nil, ""},
		{[]int{1}, "1"},
		{[]int{1, 10000}, "1 / 10,000"},
		{[]int{1, 1000, 10000}, "1 / 1,000 / 10,000"},
	} {
		if got := partitionList(tc.counts); got != tc.want {
			t.Errorf("partitionList(%v) = %q, want %q", tc.counts, got, tc.want)
		}
	}
}
