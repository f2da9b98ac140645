package bench

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/unilog/unilog/commitlog"
)

// The behavioural suite both layouts must pass, so that the benchmark
// compares layouts that store and return the same thing.

func suiteBatch(p int32, n, size int, first uint64) []commitlog.Message {
	ms := make([]commitlog.Message, n)
	for i := range ms {
		body := make([]byte, size)
		binary.BigEndian.PutUint64(body, first+uint64(i))
		binary.BigEndian.PutUint32(body[8:], uint32(p))
		ms[i] = commitlog.Message{Topic: Topic, Partition: p, Key: binary.BigEndian.AppendUint32(nil, uint32(p)), Body: body}
	}
	return ms
}

// readPartition reads a partition from offset 0 in fetches of maxBytes and
// checks that offsets are dense and bodies carry their sequence number.
func readPartition(t *testing.T, l Layout, p int32, maxBytes int) int {
	t.Helper()
	n := 0
	for off := int64(0); ; {
		next, err := l.Read(p, off, maxBytes, func(r *commitlog.Record) error {
			if r.QueueOffset != int64(n) || r.Partition != p || r.Topic != Topic {
				return fmt.Errorf("record %s-%d@%d, want %s-%d@%d", r.Topic, r.Partition, r.QueueOffset, Topic, p, n)
			}
			if seq := binary.BigEndian.Uint64(r.Body); seq != uint64(n) {
				return fmt.Errorf("partition %d offset %d carries %d", p, n, seq)
			}
			if got := int32(binary.BigEndian.Uint32(r.Body[8:])); got != p {
				return fmt.Errorf("partition %d offset %d body from partition %d", p, n, got)
			}
			n++
			return nil
		})
		if err != nil {
			t.Fatalf("read %d@%d: %v", p, off, err)
		}
		if next == off {
			return n
		}
		off = next
	}
}

func TestLayoutSuite(t *testing.T) {
	suite := []struct {
		name string
		run  func(t *testing.T, layout string, cfg LayoutConfig)
	}{
		{"AppendReadByOffset", suiteAppendRead},
		{"RollAcrossSegments", suiteRoll},
		{"ReopenKeepsDataAndOffsets", suiteReopen},
		{"SyncFlush", suiteSync},
	}
	for _, layout := range Layouts {
		for _, c := range suite {
			t.Run(layout+"/"+c.name, func(t *testing.T) {
				c.run(t, layout, LayoutConfig{Dir: t.TempDir(), Flush: Flush{Mode: "none"}, SegmentBytes: 1 << 20})
			})
		}
	}
}

func mustOpen(t *testing.T, layout string, cfg LayoutConfig) Layout {
	t.Helper()
	l, err := OpenLayout(layout, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func appendN(t *testing.T, l Layout, p int32, batches, perBatch, size int, first uint64) {
	t.Helper()
	for b := range batches {
		if err := l.Append(p, suiteBatch(p, perBatch, size, first+uint64(b*perBatch))); err != nil {
			t.Fatal(err)
		}
	}
}

func suiteAppendRead(t *testing.T, layout string, cfg LayoutConfig) {
	l := mustOpen(t, layout, cfg)
	defer l.Close()
	if err := l.Prepare(4); err != nil {
		t.Fatal(err)
	}
	for p := range int32(4) {
		appendN(t, l, p, 5+int(p), 7, 300, 0)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	for p := range int32(4) {
		want := (5 + int(p)) * 7
		if end, err := l.EndOffset(p); err != nil || end != int64(want) {
			t.Errorf("partition %d end offset %d (%v), want %d", p, end, err, want)
		}
		for _, maxBytes := range []int{1, 1000, 1 << 20} {
			if n := readPartition(t, l, p, maxBytes); n != want {
				t.Errorf("partition %d fetch %d: read %d records, want %d", p, maxBytes, n, want)
			}
		}
	}
	// A read from the middle starts at exactly that offset.
	var got int64 = -1
	if _, err := l.Read(2, 17, 1, func(r *commitlog.Record) error { got = r.QueueOffset; return nil }); err != nil || got != 17 {
		t.Errorf("read at 17: first record %d (%v)", got, err)
	}
	if _, err := l.Read(1, 1000, 1, func(*commitlog.Record) error { return nil }); err == nil {
		t.Error("read past the end offset succeeded")
	}
}

func suiteRoll(t *testing.T, layout string, cfg LayoutConfig) {
	l := mustOpen(t, layout, cfg)
	defer l.Close()
	if err := l.Prepare(2); err != nil {
		t.Fatal(err)
	}
	// 2 x 400 x 8 KiB = 6.4 MB over 1 MiB segments: several rolls each side.
	for b := range 400 {
		for p := range int32(2) {
			if err := l.Append(p, suiteBatch(p, 2, 4096, uint64(b*2))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	for p := range int32(2) {
		if n := readPartition(t, l, p, 64<<10); n != 800 {
			t.Errorf("partition %d: read %d records, want 800", p, n)
		}
	}
}

func suiteReopen(t *testing.T, layout string, cfg LayoutConfig) {
	l := mustOpen(t, layout, cfg)
	if err := l.Prepare(3); err != nil {
		t.Fatal(err)
	}
	for p := range int32(3) {
		appendN(t, l, p, 30, 10, 1000, 0)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, layout, cfg)
	for p := range int32(3) {
		if end, err := l.EndOffset(p); err != nil || end != 300 {
			t.Fatalf("reopened partition %d end offset %d (%v), want 300", p, end, err)
		}
		appendN(t, l, p, 5, 10, 1000, 300)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, layout, cfg)
	defer l.Close()
	for p := range int32(3) {
		if n := readPartition(t, l, p, 32<<10); n != 350 {
			t.Errorf("partition %d after two reopens: read %d records, want 350", p, n)
		}
	}
}

func suiteSync(t *testing.T, layout string, cfg LayoutConfig) {
	for _, f := range []string{"sync", "interval:5ms"} {
		var err error
		if cfg.Flush, err = ParseFlush(f); err != nil {
			t.Fatal(err)
		}
		cfg.Dir = t.TempDir()
		l := mustOpen(t, layout, cfg)
		if err := l.Prepare(2); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 2)
		for p := range int32(2) {
			go func() {
				for b := range 20 {
					if err := l.Append(p, suiteBatch(p, 3, 200, uint64(b*3))); err != nil {
						done <- err
						return
					}
				}
				done <- nil
			}()
		}
		for range 2 {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		for p := range int32(2) {
			if n := readPartition(t, l, p, 4096); n != 60 {
				t.Errorf("%s: partition %d: read %d records, want 60", f, p, n)
			}
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
