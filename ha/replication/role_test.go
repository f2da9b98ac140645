package replication

import (
	"slices"
	"testing"
)

// TestNodeIDs: the published set is the followers' node ids; a name that
// is not one is left out, as MayLead could never elect it.
func TestNodeIDs(t *testing.T) {
	for _, tc := range []struct {
		nodes []string
		want  []int32
	}{
		{nil, nil},
		{[]string{}, nil},
		{[]string{"2", "3"}, []int32{2, 3}},
		{[]string{"2", "/var/lib/unilog", "99999999999"}, []int32{2}},
	} {
		if got := nodeIDs(tc.nodes); !slices.Equal(got, tc.want) {
			t.Fatalf("nodeIDs(%q) = %v, want %v", tc.nodes, got, tc.want)
		}
	}
}
