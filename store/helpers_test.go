package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/consumequeue"
)

// testOptions use small files so that tests roll commit-log files and fill
// several consume-queue files.
func testOptions(dir string) Options {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return Options{
		Dir: dir,
		CommitLog: commitlog.Options{
			FileSize:      64 << 10,
			FlushInterval: 10 * time.Millisecond,
			RetentionAge:  -1,
		},
		// Queues past 16 entries leave the journal for files, so tests
		// see both.
		ConsumeQueue:       consumequeue.Options{EntriesPerFile: 64, SmallEntries: 16},
		CheckpointInterval: 10 * time.Millisecond,
		Logger:             l,
	}
}

func mustOpen(t testing.TB, opts Options) *Store {
	t.Helper()
	d, err := Open(opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return d
}

var testTopics = []string{"orders", "clicks", "t.3_x-y"}

// genMessage derives message i of a stream from seed, so a parent process
// can recompute what a child appended.
func genMessage(seed uint64, i int) commitlog.Message {
	rng := rand.New(rand.NewPCG(seed, uint64(i)))
	m := commitlog.Message{
		Topic:             testTopics[rng.IntN(len(testTopics))],
		Partition:         int32(rng.IntN(4)),
		Count:             int32(1 + rng.IntN(3)),
		ProducerTimestamp: int64(rng.Uint32()),
	}
	switch rng.IntN(3) {
	case 0:
	case 1:
		m.Key = []byte{}
	default:
		m.Key = randBytes(rng, 1+rng.IntN(40))
	}
	for range rng.IntN(4) {
		m.Headers = append(m.Headers, commitlog.Header{Key: fmt.Sprintf("h%d", rng.IntN(100)), Value: randBytes(rng, rng.IntN(30))})
	}
	size := rng.IntN(300)
	if rng.IntN(10) == 0 {
		size = 1000 + rng.IntN(6000)
	}
	m.Body = randBytes(rng, size)
	return m
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// contentHash covers what a consumer gets back: key (and whether it is
// nil), headers and body.
func contentHash(key []byte, headers []commitlog.Header, body []byte) string {
	h := sha256.New()
	var n [8]byte
	if key == nil {
		h.Write([]byte{0})
	} else {
		h.Write([]byte{1})
		binary.BigEndian.PutUint64(n[:], uint64(len(key)))
		h.Write(n[:])
		h.Write(key)
	}
	binary.BigEndian.PutUint64(n[:], uint64(len(headers)))
	h.Write(n[:])
	for _, x := range headers {
		binary.BigEndian.PutUint64(n[:], uint64(len(x.Key)))
		h.Write(n[:])
		h.Write([]byte(x.Key))
		binary.BigEndian.PutUint64(n[:], uint64(len(x.Value)))
		h.Write(n[:])
		h.Write(x.Value)
	}
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// appended is what a test remembers about one append.
type appended struct {
	msg commitlog.Message
	pos commitlog.Position
}

// appendN appends n generated messages, a few of them as batches.
func appendN(t testing.TB, d *Store, seed uint64, first, n int) []appended {
	t.Helper()
	var out []appended
	for i := first; i < first+n; {
		k := 1
		if i%7 == 0 {
			k = min(5, first+n-i)
		}
		ms := make([]commitlog.Message, k)
		for j := range ms {
			ms[j] = genMessage(seed, i+j)
		}
		ps, err := d.log.AppendBatch(ms)
		if err != nil {
			t.Fatalf("AppendBatch: %v", err)
		}
		for j := range ms {
			out = append(out, appended{msg: ms[j], pos: ps[j]})
		}
		i += k
	}
	return out
}

func waitDispatched(t testing.TB, d *Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.WaitDispatched(ctx, d.log.WriteOffset()); err != nil {
		t.Fatalf("WaitDispatched: %v", err)
	}
}

// waitPromoted waits for the dispatcher to index everything written and
// then for the promotions that indexing asked for, so that the consume
// queues' files no longer change on their own.
func waitPromoted(t testing.TB, d *Store) {
	t.Helper()
	waitDispatched(t, d)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.queues.WaitPromotions(ctx); err != nil {
		t.Fatalf("WaitPromotions: %v", err)
	}
}

// checkReadable asserts that every offset of the record is found through
// its consume queue with the same content.
func checkReadable(t testing.TB, d *Store, a appended) {
	t.Helper()
	m := a.msg
	for off := a.pos.QueueOffset; off < a.pos.QueueOffset+int64(max(m.Count, 1)); off++ {
		if err := readBack(d, m.Topic, m.Partition, off, a.pos.PhysOffset, contentHash(m.Key, m.Headers, m.Body)); err != nil {
			t.Fatal(err)
		}
	}
}

// readBack reads offset off of a partition through its consume queue and
// compares the record found with what was appended.
func readBack(d *Store, topic string, partition int32, off, phys int64, hash string) error {
	q, ok := d.queue(topic, partition)
	if !ok {
		return fmt.Errorf("%s/%d: no consume queue", topic, partition)
	}
	e, err := q.Get(off)
	if err != nil {
		return fmt.Errorf("%s/%d offset %d: %v", topic, partition, off, err)
	}
	if phys >= 0 && e.PhysOffset != phys {
		return fmt.Errorf("%s/%d offset %d: entry at %d, appended at %d", topic, partition, off, e.PhysOffset, phys)
	}
	v, err := d.log.Read(e.PhysOffset)
	if err != nil {
		return fmt.Errorf("%s/%d offset %d: read %d: %v", topic, partition, off, e.PhysOffset, err)
	}
	defer v.Release()
	r := v.Record()
	switch {
	case r.Topic != topic || r.Partition != partition:
		return fmt.Errorf("%s/%d offset %d: record of %s/%d", topic, partition, off, r.Topic, r.Partition)
	case off < r.QueueOffset || off >= r.QueueOffset+int64(max(r.Count, 1)):
		return fmt.Errorf("%s/%d offset %d: record holds [%d,+%d)", topic, partition, off, r.QueueOffset, r.Count)
	case e.Size != r.TotalSize || e.Timestamp < r.ProducerTimestamp:
		return fmt.Errorf("%s/%d offset %d: entry %+v, record size %d max timestamp %d", topic, partition, off, e, r.TotalSize, r.ProducerTimestamp)
	case contentHash(r.Key, r.Headers, r.Body) != hash:
		return fmt.Errorf("%s/%d offset %d: content differs", topic, partition, off)
	}
	return nil
}

func equalFiles(a, b map[string][]byte) error {
	for name, x := range a {
		y, ok := b[name]
		if !ok {
			return fmt.Errorf("%s missing", name)
		}
		if !bytes.Equal(x, y) {
			return fmt.Errorf("%s differs", name)
		}
	}
	for name := range b {
		if _, ok := a[name]; !ok {
			return fmt.Errorf("%s is new", name)
		}
	}
	return nil
}
