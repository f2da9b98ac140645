package replication

import "testing"

// TestMayLead: only a follower the last leader had in sync takes its
// lease, the most caught-up one first, ties to the lowest node id.
func TestMayLead(t *testing.T) {
	peer := func(id int32, group string, end int64) Candidate {
		return Candidate{Node: id, Group: group, LogEnd: end}
	}
	for _, tc := range []struct {
		name   string
		self   int32
		end    int64
		leader int32
		isr    []int32
		known  bool
		peers  []Candidate
		want   bool
	}{
		{"held the newest lease itself", 1, 0, 1, nil, true, nil, true},
		{"not in the leader's in-sync set", 2, 900, 1, []int32{3}, true, nil, false},
		{"left alone by an empty in-sync set", 2, 900, 1, nil, true, nil, false},
		{"in sync and the longest log", 2, 900, 1, []int32{2, 3}, true, []Candidate{peer(3, "g", 800)}, true},
		{"an in-sync peer is longer", 2, 800, 1, []int32{2, 3}, true, []Candidate{peer(3, "g", 900)}, false},
		{"tie: the lower id takes it", 3, 900, 1, []int32{2, 3}, true, []Candidate{peer(2, "g", 900)}, false},
		{"tie: higher peer id", 2, 900, 1, []int32{2, 3}, true, []Candidate{peer(3, "g", 900)}, true},
		{"a longer peer out of sync does not count", 2, 800, 1, []int32{2}, true, []Candidate{peer(3, "g", 900)}, true},
		{"the old leader's record does not count", 2, 800, 1, []int32{2}, true, []Candidate{peer(1, "g", 900)}, true},
		{"another group does not count", 2, 800, 1, []int32{2}, true, []Candidate{peer(4, "h", 900)}, true},
		{"set unknown: the longest log", 2, 800, 1, nil, false, []Candidate{peer(3, "g", 900)}, false},
		{"set unknown, longest", 3, 900, -1, nil, false, []Candidate{peer(2, "g", 800)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := MayLead(peer(tc.self, "g", tc.end), tc.leader, tc.isr, tc.known, tc.peers); got != tc.want {
				t.Fatalf("MayLead = %v, want %v", got, tc.want)
			}
		})
	}
}
