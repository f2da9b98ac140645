package main

import (
	"slices"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestMayLead: only a follower the last leader had in sync takes its
// lease, the most caught-up one first, ties to the lowest node id.
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
