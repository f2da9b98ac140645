package main

import (
	"testing"

	"github.com/urfave/cli/v2"
)

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
