package store

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/consumequeue"
	"github.com/unilog/unilog/internal/framed"
)

func TestInspectReport(t *testing.T) {
	dir := t.TempDir()
	d := mustOpen(t, testOptions(dir))
	recs := appendN(t, d, 41, 0, 300)
	nfiles := len(d.log.Files())
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	var progressed int64
	rep, err := Inspect(dir, InspectOptions{Verify: true, Progress: func(done, total int64) { progressed = done }})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("problems in a clean directory: %v", rep.Problems)
	}
	if rep.Unclean || rep.CheckpointErr != nil || rep.Checkpoint.Dispatched != rep.LogEnd {
		t.Fatalf("unclean %v, checkpoint %+v (%v), log end %d", rep.Unclean, rep.Checkpoint, rep.CheckpointErr, rep.LogEnd)
	}
	if rep.Records != int64(len(recs)) || len(rep.Files) != nfiles || progressed == 0 {
		t.Fatalf("%d records in %d files (progress %d), want %d in %d", rep.Records, len(rep.Files), progressed, len(recs), nfiles)
	}
	offsets := map[string]int64{}
	for _, a := range recs {
		offsets[a.msg.Topic+"/"+string(rune('0'+a.msg.Partition))] += int64(a.msg.Count)
	}
	var entries int64
	for _, p := range rep.Partitions {
		key := p.Topic + "/" + string(rune('0'+p.Partition))
		if !p.HasQueue || p.MinOffset != 0 || p.MaxOffset != offsets[key] || p.LogNext != offsets[key] {
			t.Errorf("partition %+v, want offsets [0, %d)", p, offsets[key])
		}
		entries += p.MaxOffset
	}
	if rep.Verified != entries {
		t.Fatalf("verified %d entries, queues hold %d", rep.Verified, entries)
	}
	first := rep.Files[0]
	if first.FirstTimestamp == 0 || first.LastTimestamp < first.FirstTimestamp || first.Used == 0 {
		t.Fatalf("first file %+v", first)
	}

	var phys []int64
	var hashes []string
	err = Dump(dir, recs[0].msg.Topic, recs[0].msg.Partition, 0, 3, func(r *commitlog.Record) error {
		phys = append(phys, r.PhysOffset)
		hashes = append(hashes, contentHash(r.Key, r.Headers, r.Body))
		return nil
	})
	if err != nil || len(phys) != 3 || phys[0] != recs[0].pos.PhysOffset {
		t.Fatalf("dump: %v, records at %v", err, phys)
	}
	if hashes[0] != contentHash(recs[0].msg.Key, recs[0].msg.Headers, recs[0].msg.Body) {
		t.Fatal("dump shows other content than was appended")
	}
}

// TestVerifyCatchesMisplacedEntry rewrites one consume-queue entry with a
// valid CRC but the position of another record, in a queue file and in the
// journal of small queues; then tears it.
func TestVerifyCatchesMisplacedEntry(t *testing.T) {
	for _, tc := range []struct {
		name  string
		small int
		// entries returns the file and the bytes of offsets 0 and 1's
		// entries (position, size, timestamp) and a function that fixes
		// the CRC over entry 1.
		entries func(t *testing.T, dir string) (path string, b, e0, e1 []byte, seal func())
		torn    string
	}{
		{"file", -1, func(t *testing.T, dir string) (string, []byte, []byte, []byte, func()) {
			path := filepath.Join(dir, "consumequeue", "v", "0", "00000000000000000000")
			b := readFile(t, path)
			slot0 := b[consumequeue.HeaderSize : consumequeue.HeaderSize+consumequeue.EntrySize]
			slot1 := b[consumequeue.HeaderSize+consumequeue.EntrySize : consumequeue.HeaderSize+2*consumequeue.EntrySize]
			return path, b, slot0[8:28], slot1[8:28], func() { binary.BigEndian.PutUint32(slot1[28:], framed.Checksum(slot1[:28])) }
		}, "after an unwritten or damaged slot"},
		{"journal", 0, func(t *testing.T, dir string) (string, []byte, []byte, []byte, func()) {
			path := filepath.Join(dir, "consumequeue", "@journal", "00000000000000000001")
			b := readFile(t, path)
			// Records: length, CRC32C of the body, body; an entry's body
			// is type 2, queue id, offset, then the 20 bytes compared.
			var recs []int // positions of the entry records
			for pos := consumequeue.JournalHeaderSize; pos < len(b); {
				n := int(binary.BigEndian.Uint32(b[pos:]))
				if b[pos+8] == 2 {
					recs = append(recs, pos)
				}
				pos += 8 + n
			}
			if len(recs) != 3 {
				t.Fatalf("%d entry records in the journal, want 3", len(recs))
			}
			r0, r1 := b[recs[0]:recs[0]+41], b[recs[1]:recs[1]+41]
			return path, b, r0[21:41], r1[21:41], func() { binary.BigEndian.PutUint32(r1[4:], framed.Checksum(r1[8:])) }
		}, "damaged before its synced mark"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := testOptions(dir)
			opts.ConsumeQueue.SmallEntries = tc.small
			d := mustOpen(t, opts)
			for range 3 {
				if _, err := d.log.Append(&commitlog.Message{Topic: "v", Body: []byte("body")}); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			if err := Verify(dir); err != nil {
				t.Fatal(err)
			}
			path, b, e0, e1, seal := tc.entries(t, dir)
			copy(e1, e0) // offset 1 now points at offset 0's record
			seal()
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			err := Verify(dir)
			if err == nil || !strings.Contains(err.Error(), "offset 1 points at the record of offsets [0, 1)") {
				t.Fatalf("Verify of a misplaced entry: %v", err)
			}
			// A torn entry in the middle reads as a hole in a file, as
			// damage before the synced mark in the journal.
			e1[0] ^= 1
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := Verify(dir); err == nil || !strings.Contains(err.Error(), tc.torn) {
				t.Fatalf("Verify of a torn entry: %v", err)
			}
		})
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestInspectChangesNothing(t *testing.T) {
	dir := t.TempDir()
	d := mustOpen(t, testOptions(dir))
	appendN(t, d, 42, 0, 50)
	waitPromoted(t, d)
	// Let the broker's own writes settle first: the flush writes the log's
	// flushed mark, and the checkpoint follows it.
	if err := d.log.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.checkpoint(); err != nil {
		t.Fatal(err)
	}
	// Inspect a live directory: it must not touch the files or the lock.
	// The checkpointer, which runs on its own goroutine, is held off
	// meanwhile (its lock), so that only Inspect could change a file.
	d.cpRun.Lock()
	before := readDir(t, dir)
	if _, err := Inspect(dir, InspectOptions{Verify: true}); err != nil {
		t.Fatal(err)
	}
	if err := equalFiles(before, readDir(t, dir)); err != nil {
		t.Fatalf("inspect changed the directory: %v", err)
	}
	d.cpRun.Unlock()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestInspectListsWhatOpenServes: a directory "0042" beside a topic's
// queues is not partition 42 to consumequeue.Open, so inspect does not
// report it either (it once did, from a second reading of the layout).
func TestInspectListsWhatOpenServes(t *testing.T) {
	dir := t.TempDir()
	d := mustOpen(t, testOptions(dir))
	appendN(t, d, 41, 0, 300)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := Inspect(dir, InspectOptions{})
	if err != nil || len(rep.Partitions) == 0 {
		t.Fatalf("inspect: %v, %d partitions", err, len(rep.Partitions))
	}
	stray := filepath.Join(dir, "consumequeue", rep.Partitions[0].Topic, "0042")
	if err := os.MkdirAll(stray, 0o755); err != nil {
		t.Fatal(err)
	}
	rep, err = Inspect(dir, InspectOptions{Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Partitions {
		if p.Partition == 42 {
			t.Errorf("inspect lists %s as partition %+v", stray, p)
		}
	}
	if !rep.OK() {
		t.Errorf("problems: %v", rep.Problems)
	}
}
