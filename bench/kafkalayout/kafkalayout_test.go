package kafkalayout

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/unilog/unilog/commitlog"
)

const topic = "t"

func batch(p int32, n, size int, seq int) []commitlog.Message {
	ms := make([]commitlog.Message, n)
	for i := range ms {
		body := bytes.Repeat([]byte{byte(seq + i)}, size)
		binary.BigEndian.PutUint64(body, uint64(seq+i))
		ms[i] = commitlog.Message{Topic: topic, Partition: p, Key: []byte("k"), Body: body}
	}
	return ms
}

func open(t *testing.T, opts Options) *Log {
	t.Helper()
	l, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// readAll returns the sequence numbers stored in the bodies of one partition.
func readAll(t *testing.T, l *Log, p int32) []uint64 {
	t.Helper()
	var seqs []uint64
	for off := int64(0); ; {
		next, err := l.Read(topic, p, off, 8192, func(r *commitlog.Record) error {
			if r.QueueOffset != int64(len(seqs)) {
				return fmt.Errorf("record offset %d, want %d", r.QueueOffset, len(seqs))
			}
			seqs = append(seqs, binary.BigEndian.Uint64(r.Body))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if next == off {
			return seqs
		}
		off = next
	}
}

func TestIndexesPreallocatedSparseAndMappedWithoutDescriptor(t *testing.T) {
	dir := t.TempDir()
	l := open(t, Options{Dir: dir})
	defer l.Close()
	if err := l.CreatePartition(topic, 3); err != nil {
		t.Fatal(err)
	}
	prefix := filepath.Join(dir, "t-3", "00000000000000000000")
	for _, c := range []struct {
		ext  string
		size int64
	}{{".index", DefaultMaxIndexSize}, {".timeindex", DefaultMaxIndexSize - DefaultMaxIndexSize%timeEntrySize}} {
		fi, err := os.Stat(prefix + c.ext)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() != c.size {
			t.Errorf("%s size %d, want %d", c.ext, fi.Size(), c.size)
		}
		if blocks := fi.Sys().(*syscall.Stat_t).Blocks; blocks*512 >= c.size {
			t.Errorf("%s has %d blocks allocated: not sparse", c.ext, blocks)
		}
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	for _, ext := range []string{".index", ".timeindex"} {
		if !strings.Contains(string(maps), prefix+ext) {
			t.Errorf("%s not mapped", ext)
		}
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var open []string
	for _, fd := range fds {
		if target, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && strings.HasPrefix(target, prefix) {
			open = append(open, target)
		}
	}
	if len(open) != 1 || open[0] != prefix+".log" {
		t.Errorf("open descriptors under the segment: %v, want only the .log", open)
	}
}

func TestSparseIndexFollowsIntervalBytes(t *testing.T) {
	l := open(t, Options{Dir: t.TempDir(), IndexIntervalBytes: 4096})
	defer l.Close()
	for i := range 10 {
		if _, err := l.Append(topic, 0, batch(0, 10, 1000, i*10)); err != nil {
			t.Fatal(err)
		}
	}
	p, _ := l.partition(topic, 0, false)
	seg := p.active()
	size := int64(commitlog.EncodedSize(&batch(0, 1, 1000, 0)[0]))
	// An entry before every record once more than 4096 bytes went by: with
	// records of size s that is every ceil(4097/s)-th record, never the first.
	every := (4096 + size) / size
	if want := int((100 - 1) / every); seg.index.entries != want {
		t.Fatalf("index entries %d, want %d", seg.index.entries, want)
	}
	for i := range seg.index.entries {
		rel, pos := seg.index.at(i)
		if int64(pos) != int64(rel)*size || int64(rel) != int64(i+1)*every {
			t.Errorf("entry %d = (%d, %d), want (%d, %d)", i, rel, pos, int64(i+1)*every, int64(i+1)*every*size)
		}
	}
	if seg.timeIndex.entries < 1 {
		t.Errorf("time index empty")
	}
	for _, off := range []int64{0, 1, every - 1, every, every + 1, 99} {
		var got int64 = -1
		if _, err := l.Read(topic, 0, off, 1, func(r *commitlog.Record) error { got = r.QueueOffset; return nil }); err != nil {
			t.Fatal(err)
		}
		if got != off {
			t.Errorf("read at %d returned offset %d", off, got)
		}
	}
}

func TestRollTrimsIndexesAndKeepsEveryLogOpen(t *testing.T) {
	dir := t.TempDir()
	l := open(t, Options{Dir: dir, SegmentBytes: 64 << 10, IndexIntervalBytes: 1024})
	for i := range 40 {
		if _, err := l.Append(topic, 1, batch(1, 8, 1000, i*8)); err != nil {
			t.Fatal(err)
		}
	}
	p, _ := l.partition(topic, 1, false)
	if len(p.segments) < 4 {
		t.Fatalf("%d segments, want several", len(p.segments))
	}
	for _, s := range p.segments[:len(p.segments)-1] {
		prefix := filepath.Join(dir, "t-1", segmentName(s.base))
		if got, want := fileSize(prefix+".index"), s.index.entries*offsetEntrySize; got != want || want == 0 {
			t.Errorf("rolled %d: .index %d bytes, want %d (trimmed)", s.base, got, want)
		}
		if got, want := fileSize(prefix+".timeindex"), s.timeIndex.entries*timeEntrySize; got != want || want == 0 {
			t.Errorf("rolled %d: .timeindex %d bytes, want %d (trimmed)", s.base, got, want)
		}
		if s.size > 64<<10 {
			t.Errorf("segment %d holds %d bytes, over segment.bytes", s.base, s.size)
		}
		if _, err := s.log.Stat(); err != nil {
			t.Errorf("rolled segment's .log closed: %v", err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = open(t, Options{Dir: dir, SegmentBytes: 64 << 10, IndexIntervalBytes: 1024})
	defer l.Close()
	seqs := readAll(t, l, 1)
	if len(seqs) != 320 {
		t.Fatalf("read %d records after reopen, want 320", len(seqs))
	}
	for i, s := range seqs {
		if s != uint64(i) {
			t.Fatalf("record %d carries %d", i, s)
		}
	}
}

func TestRecoveryCutsTornTailAndRebuildsIndex(t *testing.T) {
	dir := t.TempDir()
	opts := Options{Dir: dir, IndexIntervalBytes: 2048}
	l := open(t, opts)
	for i := range 5 {
		if _, err := l.Append(topic, 0, batch(0, 10, 500, i*10)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "t-0", segmentName(0)+".log")
	indexPath := filepath.Join(dir, "t-0", segmentName(0)+".index")
	fi, _ := os.Stat(logPath)
	// A torn last record, and an index that lost its tail and gained an entry
	// pointing nowhere, as after a crash between the writes.
	if err := os.Truncate(logPath, fi.Size()-100); err != nil {
		t.Fatal(err)
	}
	idx, err := os.ReadFile(indexPath)
	if err != nil {
		t.Fatal(err)
	}
	bogus := binary.BigEndian.AppendUint32(nil, 1000)
	bogus = binary.BigEndian.AppendUint32(bogus, uint32(fi.Size()+4096))
	if err := os.WriteFile(indexPath, append(idx[:len(idx)-8], bogus...), 0o644); err != nil {
		t.Fatal(err)
	}

	l = open(t, opts)
	end, err := l.EndOffset(topic, 0)
	if err != nil || end != 49 {
		t.Fatalf("end offset %d (%v), want 49", end, err)
	}
	if _, err := l.Append(topic, 0, batch(0, 11, 500, 49)); err != nil {
		t.Fatal(err)
	}
	p, _ := l.partition(topic, 0, false)
	rebuilt := p.active().index.entries
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	clean := t.TempDir()
	c := open(t, Options{Dir: clean, IndexIntervalBytes: 2048})
	if _, err := c.Append(topic, 0, batch(0, 49, 500, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Append(topic, 0, batch(0, 11, 500, 49)); err != nil {
		t.Fatal(err)
	}
	cp, _ := c.partition(topic, 0, false)
	if want := cp.active().index.entries; rebuilt != want {
		t.Errorf("recovered index has %d entries, a clean write %d", rebuilt, want)
	}
	c.Close()

	l = open(t, opts)
	defer l.Close()
	seqs := readAll(t, l, 0)
	if len(seqs) != 60 {
		t.Fatalf("read %d records, want 60", len(seqs))
	}
	for i, s := range seqs {
		if s != uint64(i) {
			t.Fatalf("record %d carries %d", i, s)
		}
	}
}

func TestReadOutOfRangeAndUnknownPartition(t *testing.T) {
	l := open(t, Options{Dir: t.TempDir()})
	defer l.Close()
	if _, err := l.Append(topic, 0, batch(0, 3, 100, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Read(topic, 0, 4, 100, func(*commitlog.Record) error { return nil }); !errors.Is(err, ErrOutOfRange) {
		t.Errorf("read past end: %v, want ErrOutOfRange", err)
	}
	if _, err := l.Read(topic, 9, 0, 100, func(*commitlog.Record) error { return nil }); !errors.Is(err, ErrNoPartition) {
		t.Errorf("read unknown partition: %v, want ErrNoPartition", err)
	}
	n := 0
	next, err := l.Read(topic, 0, 3, 100, func(*commitlog.Record) error { n++; return nil })
	if err != nil || next != 3 || n != 0 {
		t.Errorf("read at end: next %d, %d records, %v", next, n, err)
	}
}

func TestFlushModesAppendAndClose(t *testing.T) {
	for _, opts := range []Options{{Flush: FlushNone}, {Flush: FlushInterval, FlushInterval: time.Millisecond}, {Flush: FlushSync}} {
		opts.Dir = t.TempDir()
		l := open(t, opts)
		for i := range 20 {
			if _, err := l.Append(topic, int32(i%4), batch(int32(i%4), 5, 200, i*5)); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatalf("flush mode %d: %v", opts.Flush, err)
		}
		if _, err := l.Append(topic, 0, batch(0, 1, 10, 0)); !errors.Is(err, ErrClosed) {
			t.Errorf("append after close: %v, want ErrClosed", err)
		}
	}
}
