package store

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/internal/framed"
)

// TestAppendCRCChecked: a batch appended with CRCChecked is stored with
// the record CRC derived from its own CRC and reads back whole after a
// restart, the base offset stamped; one whose CRC field lies (what a
// caller must never vouch for) is stored as a record a recovery that scans
// it finds damaged.
func TestAppendCRCChecked(t *testing.T) {
	for _, tc := range []struct {
		name    string
		size    int
		lie     bool
		corrupt bool
	}{
		{"small", 200, false, false},
		{"past the combination's threshold", 16 << 10, false, false},
		{"a lying CRC", 16 << 10, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			live := &liveTopics{ids: map[string]commitlog.TopicID{"t": {7}}}
			d := mustOpen(t, incarnationOptions(dir, live))
			body := make([]byte, tc.size)
			for i := range body {
				body[i] = byte(i * 7)
			}
			crc := framed.Checksum(body[batchCRCFrom:])
			if tc.lie {
				crc++
			}
			binary.BigEndian.PutUint32(body[batchCRCAt:], crc)
			for i := range 2 {
				if _, err := d.Append(nil, []Batch{{Topic: "t", Count: 1, Records: body, CRCChecked: true}}); err != nil {
					t.Fatalf("append %d: %v", i, err)
				}
			}
			waitDispatched(t, d)
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			if tc.corrupt {
				// Without its checkpoint the store recovers the log from its start.
				if err := os.Remove(filepath.Join(dir, checkpointName)); err != nil {
					t.Fatal(err)
				}
				if d, err := Open(incarnationOptions(dir, live)); !errors.Is(err, commitlog.ErrDamaged) {
					if err == nil {
						d.Close()
					}
					t.Fatalf("opening a log holding a batch stored with a lying CRC: %v, want ErrDamaged", err)
				}
				return
			}
			d = mustOpen(t, incarnationOptions(dir, live))
			defer d.Close()
			got, base, _, err := d.Partition("t", 0).ReadBatch(1, nil)
			if err != nil || base != 1 || binary.BigEndian.Uint64(got) != 1 || string(got[8:]) != string(body[8:]) {
				t.Fatalf("offset 1: base %d, %d bytes, %v", base, len(got), err)
			}
		})
	}
}
