package commitlog

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/unilog/unilog/internal/fileops/fileopstest"
	"github.com/unilog/unilog/internal/framed"
)

// writevMessage is message i with a body of n bytes, stamped and with a
// vouched body CRC as the store appends Kafka batches when stamp is set.
func writevMessage(i, n int, stamp bool) Message {
	m := testMessage(i, n)
	if stamp {
		m.Flags = FlagStampOffset
		m.BodyCRCFrom = int32(min(21, n))
		m.BodyCRC = framed.Checksum(m.Body[m.BodyCRCFrom:])
	}
	return m
}

// TestExternalBodies: batches mixing bodies copied into the writer's
// buffer and bodies written from the caller's memory (stamped or not,
// across files, more iovecs than one pwritev takes) store exactly the
// bytes Encode makes, and recover so after a restart.
func TestExternalBodies(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fileSize int64
		sizes    []int
		repeat   int
	}{
		{"mixed", 1 << 20, []int{100, externalMin, externalMin - 1, 20 << 10, 8, externalMin + 1}, 1},
		{"across files", 64 << 10, []int{30 << 10, 100, 17 << 10, 5000}, 4},
		{"past iovMax", 8 << 20, []int{externalMin}, iovMax},
		// Writes cut at every multiple of zeroChunk (piece.go), inside
		// buffered bytes and inside bodies, one longer than a piece.
		{"across pieces", 4 << 20, []int{3000, zeroChunk + 12345, 70000, 100, zeroChunk - 7}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOptions(t, "", tc.fileSize)
			l := openLog(t, opts)
			defer l.Close()
			var ms []Message
			for r := range tc.repeat {
				for i, n := range tc.sizes {
					ms = append(ms, writevMessage(r*len(tc.sizes)+i, n, i%2 == 0))
				}
			}
			bodies := make([][]byte, len(ms))
			for i := range ms {
				bodies[i] = bytes.Clone(ms[i].Body)
			}
			pos, err := l.AppendBatch(ms)
			if err != nil {
				t.Fatal(err)
			}
			for i := range ms {
				if !bytes.Equal(ms[i].Body, bodies[i]) {
					t.Fatalf("message %d: the caller's body changed", i)
				}
			}
			check := func(l *Log) {
				t.Helper()
				for i, p := range pos {
					v, err := l.Read(p.PhysOffset)
					if err != nil {
						t.Fatalf("record %d at %d: %v", i, p.PhysOffset, err)
					}
					want := Encode(nil, &ms[i], p.PhysOffset, p.QueueOffset, p.StoreTimestamp)
					if !bytes.Equal(v.Bytes(), want) {
						t.Fatalf("record %d (body %d bytes): stored bytes differ from Encode's", i, len(ms[i].Body))
					}
					v.Release()
				}
			}
			check(l)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l2 := openLog(t, opts)
			defer l2.Close()
			check(l2)
		})
	}
}

// TestExternalBodiesDiskFull: a batch of bodies written from the caller's
// memory that finds the disk full fails with ErrDiskFull, leaves no byte
// after the write offset, and the log goes on.
func TestExternalBodiesDiskFull(t *testing.T) {
	if !fileopstest.InChild(t) {
		return
	}
	const fileSize = 256 << 10
	opts := testOptions(t, "", fileSize)
	l := openLog(t, opts)
	defer l.Close()
	restore := fileopstest.LimitFileSize(t, 64<<10)
	var ms []Message
	for i := range 8 {
		ms = append(ms, writevMessage(i, 12<<10, i%2 == 0))
	}
	if _, err := l.AppendBatch(ms); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("a batch past the file size limit: %v, want ErrDiskFull", err)
	}
	// Lifted before reading the file: go test logs every open to a file
	// of its own, past 64 KiB by now, which the limit would fail.
	restore()
	b, err := os.ReadFile(l.Files()[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	if w := l.WriteOffset(); w != 0 || !bytes.Equal(b, make([]byte, len(b))) {
		t.Fatalf("the failed batch left bytes (write offset %d)", w)
	}
	pos, err := l.AppendBatch(ms)
	if err != nil {
		t.Fatalf("append after the limit was lifted: %v", err)
	}
	checkReadable(t, l, pos, ms)
}
