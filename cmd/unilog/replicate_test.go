package main

import (
	"slices"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/unilog/unilog/ha"
)

// TestMayLead: only a follower the last leader had in sync takes its
// lease, the most caught-up one first, ties to the lowest node id.
func TestMayLead(t *testing.T) {
	member := func(id int32, group string, end int64) ha.Member {
		return ha.Member{NodeID: id, ReplicaGroup: group, LogEndOffset: end}
	}
	for _, tc := range []struct {
		name    string
		self    int32
		end     int64
		leader  int32
		isr     []int32
		known   bool
		members []ha.Member
		want    bool
	}{
		{"held the newest lease itself", 1, 0, 1, nil, true, nil, true},
		{"not in the leader's in-sync set", 2, 900, 1, []int32{3}, true, nil, false},
		{"left alone by an empty in-sync set", 2, 900, 1, nil, true, nil, false},
		{"in sync and the longest log", 2, 900, 1, []int32{2, 3}, true, []ha.Member{member(3, "g", 800)}, true},
		{"an in-sync peer is longer", 2, 800, 1, []int32{2, 3}, true, []ha.Member{member(3, "g", 900)}, false},
		{"tie: the lower id takes it", 3, 900, 1, []int32{2, 3}, true, []ha.Member{member(2, "g", 900)}, false},
		{"tie: higher peer id", 2, 900, 1, []int32{2, 3}, true, []ha.Member{member(3, "g", 900)}, true},
		{"a longer peer out of sync does not count", 2, 800, 1, []int32{2}, true, []ha.Member{member(3, "g", 900)}, true},
		{"the old leader's record does not count", 2, 800, 1, []int32{2}, true, []ha.Member{member(1, "g", 900)}, true},
		{"another group does not count", 2, 800, 1, []int32{2}, true, []ha.Member{member(4, "h", 900)}, true},
		{"set unknown: the longest log", 2, 800, 1, nil, false, []ha.Member{member(3, "g", 900)}, false},
		{"set unknown, longest", 3, 900, -1, nil, false, []ha.Member{member(2, "g", 800)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mayLead(tc.self, "g", tc.end, tc.leader, tc.isr, tc.known, tc.members); got != tc.want {
				t.Fatalf("mayLead = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestNodeIDs: the published set is the followers' node ids; a name that
// is not one is left out, as mayLead could never elect it.
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

// TestMinInSyncFlag: --min-insync counts the leader, as Kafka's
// min.insync.replicas: 1 (the leader alone) by default, never less.
func TestMinInSyncFlag(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    int
		wantErr bool
	}{
		{nil, 1, false},
		{[]string{"--min-insync", "2"}, 2, false},
		{[]string{"--min-insync", "0"}, 0, true},
		{[]string{"--min-insync", "-1"}, 0, true},
	} {
		var got replicationConfig
		app := &cli.App{Flags: replicationFlags(), Action: func(c *cli.Context) error {
			var err error
			got, err = parseReplicationFlags(c)
			return err
		}}
		err := app.Run(append([]string{"unilog"}, tc.args...))
		if (err != nil) != tc.wantErr || err == nil && got.minInSync != tc.want {
			t.Errorf("%q: min-insync %d, error %v; want %d, error %v", tc.args, got.minInSync, err, tc.want, tc.wantErr)
		}
	}
}
