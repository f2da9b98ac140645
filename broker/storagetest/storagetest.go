// Package storagetest is the conformance suite of broker.Storage: every
// implementation (the unified log's, *store.Store, and the Kafka
// layout the benchmark serves) runs the same cases, so the broker's
// protocol front end can rely on one contract whichever storage it serves.
// nats-server runs its store tests over every store kind the same way.
//
// An implementation declares what it cannot do (Options); the suite then
// checks that it refuses that with an error instead of pretending.
package storagetest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/unilog/unilog/broker"
	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/store"
)

// Opener opens (or reopens) the storage kept in dir.
type Opener func(t *testing.T, dir string) broker.Storage

// Options says what an implementation serves beyond the core contract.
type Options struct {
	// Scans: ScanRecords replays what is stored (the group coordinator and
	// producer state need it). Without, it must refuse once records exist.
	Scans bool
	// Forget, when the storage serves DeleteTopic, makes the topic not
	// live for the storage in dir (its metadata dropped it), as a broker's
	// DeleteTopics does before it calls DeleteTopic. Without it,
	// DeleteTopic must refuse.
	Forget func(dir, topic string)
	// Replicates: Truncate, Restart and LeaderEpochs serve a replication
	// follower. Without, each must refuse with store.ErrUnsupported.
	Replicates bool
	// Moves: AppendAt copies a partition in at another log's offsets.
	// Without, it must refuse with store.ErrUnsupported.
	Moves bool
}

// Run runs every case against storages made by open, each in a directory
// of its own.
func Run(t *testing.T, open Opener, opts Options) {
	for _, tc := range []struct {
		name string
		run  func(*testing.T, Opener, Options)
	}{
		{"AppendAssignsDenseOffsets", testAppendOffsets},
		{"ReadBatchReturnsStoredBatch", testReadBatch},
		{"ReadOutsideIsRange", testReadOutside},
		{"ConcurrentAppends", testConcurrentAppends},
		{"WaiterSignalsGrowth", testWaiter},
		{"OffsetForTime", testOffsetForTime},
		{"ScanRecords", testScan},
		{"DeleteTopic", testDeleteTopic},
		{"Reopen", testReopen},
		{"Stats", testStats},
		{"Truncate", testTruncate},
		{"AppendAt", testAppendAt},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, open, opts) })
	}
}

const waitLimit = 30 * time.Second // only against hangs

// stored is one appended batch as the suite remembers it.
type stored struct {
	topic     string
	partition int32
	count     int32
	body      []byte // as appended, before the base offset is stamped
	at        broker.Appended
}

// batch builds a batch whose records start with the 8 bytes the storage
// stamps with the base offset, followed by a payload naming it.
func batch(topic string, partition, count int32, i int) broker.StorageBatch {
	body := append(make([]byte, 8), fmt.Sprintf("%s/%d/%d", topic, partition, i)...)
	return broker.StorageBatch{Topic: topic, Partition: partition, Count: count, MaxTimestamp: time.Now().UnixMilli(), Records: body}
}

// openFresh opens a storage in a new directory, closed when the test ends.
func openFresh(t *testing.T, open Opener) (broker.Storage, string) {
	t.Helper()
	dir := t.TempDir()
	st := open(t, dir)
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return st, dir
}

// appendAll appends batches in one call and waits until they are indexed.
func appendAll(t *testing.T, st broker.Storage, batches []broker.StorageBatch) []stored {
	t.Helper()
	at, err := st.Append(nil, batches)
	if err != nil || len(at) != len(batches) {
		t.Fatalf("append %d batches: %d stored, %v", len(batches), len(at), err)
	}
	out := make([]stored, len(batches))
	for i, b := range batches {
		out[i] = stored{b.Topic, b.Partition, b.Count, slices.Clone(b.Records), at[i]}
	}
	waitIndexed(t, st, at[len(at)-1].End)
	return out
}

func waitIndexed(t *testing.T, st broker.Storage, end int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := st.WaitDispatched(ctx, end); err != nil {
		t.Fatalf("wait dispatched %d: %v", end, err)
	}
	if err := st.WaitDurable(ctx, end); err != nil {
		t.Fatalf("wait durable %d: %v", end, err)
	}
}

// mixed is a request spread over three partitions of two topics, with
// batches of one to three records.
func mixed(round int) []broker.StorageBatch {
	var bs []broker.StorageBatch
	for i, tp := range []struct {
		topic string
		p     int32
	}{{"a", 0}, {"a", 1}, {"b", 0}, {"a", 0}} {
		bs = append(bs, batch(tp.topic, tp.p, int32(1+(i+round)%3), round*10+i))
	}
	return bs
}

type topicPartition struct {
	topic     string
	partition int32
}

func (tp topicPartition) String() string { return fmt.Sprintf("%s/%d", tp.topic, tp.partition) }

// checkDense checks that each partition's batches took consecutive offsets
// from 0 and, when ordered, that the physical ends grow in append order;
// it returns each partition's next offset.
func checkDense(t *testing.T, all []stored, ordered bool) map[topicPartition]int64 {
	t.Helper()
	next := map[topicPartition]int64{}
	var end int64 = -1
	for _, s := range all {
		k := topicPartition{s.topic, s.partition}
		if s.at.Base != next[k] {
			t.Fatalf("%s: batch of %d at base %d, want %d", k, s.count, s.at.Base, next[k])
		}
		next[k] += int64(s.count)
		if ordered && s.at.End <= end {
			t.Fatalf("%s: end %d after %d", k, s.at.End, end)
		}
		end = s.at.End
	}
	return next
}

func testAppendOffsets(t *testing.T, open Opener, _ Options) {
	st, _ := openFresh(t, open)
	var all []stored
	for round := range 3 {
		all = append(all, appendAll(t, st, mixed(round))...)
	}
	for k, end := range checkDense(t, all, true) {
		if lo, hi := st.Bounds(k.topic, k.partition); lo != 0 || hi != end {
			t.Errorf("%s: bounds [%d, %d), want [0, %d)", k, lo, hi, end)
		}
	}
	if lo, hi := st.Bounds("a", 7); lo != 0 || hi != 0 {
		t.Errorf("unwritten partition: bounds [%d, %d), want [0, 0)", lo, hi)
	}
	if w := st.WriteOffset(); w < all[len(all)-1].at.End {
		t.Errorf("write offset %d below the last end %d", w, all[len(all)-1].at.End)
	}
}

// checkRead reads every offset of every batch and compares it with what
// was appended, its base offset stamped into the first 8 bytes.
func checkRead(t *testing.T, st broker.Storage, all []stored) {
	t.Helper()
	prefix := []byte("kept")
	for _, s := range all {
		want := slices.Clone(s.body)
		binary.BigEndian.PutUint64(want, uint64(s.at.Base))
		for off := s.at.Base; off < s.at.Base+int64(s.count); off++ {
			out, base, next, err := st.Partition(s.topic, s.partition).ReadBatch(off, slices.Clone(prefix))
			if err != nil || base != s.at.Base || next != s.at.Base+int64(s.count) {
				t.Fatalf("%s/%d offset %d: batch [%d, %d), %v; want [%d, %d)", s.topic, s.partition, off, base, next, err, s.at.Base, s.at.Base+int64(s.count))
			}
			if !bytes.HasPrefix(out, prefix) || !bytes.Equal(out[len(prefix):], want) {
				t.Fatalf("%s/%d offset %d: read %q, want %q after %q", s.topic, s.partition, off, out, want, prefix)
			}
			v, err := st.Partition(s.topic, s.partition).ViewBatch(off)
			if err != nil || v.Base != base || v.Next != next || !bytes.Equal(v.Bytes, want) {
				t.Fatalf("%s/%d offset %d: view [%d, %d) %q, %v; want [%d, %d) %q", s.topic, s.partition, off, v.Base, v.Next, v.Bytes, err, base, next, want)
			}
			v.Release()
		}
	}
}

func testReadBatch(t *testing.T, open Opener, _ Options) {
	st, _ := openFresh(t, open)
	var all []stored
	for round := range 3 {
		all = append(all, appendAll(t, st, mixed(round))...)
	}
	checkRead(t, st, all)
}

func testReadOutside(t *testing.T, open Opener, _ Options) {
	st, _ := openFresh(t, open)
	appendAll(t, st, []broker.StorageBatch{batch("a", 0, 2, 0)})
	for _, tc := range []struct {
		topic     string
		partition int32
		offset    int64
	}{{"a", 0, 2}, {"a", 0, 1 << 40}, {"a", 1, 0}, {"none", 0, 0}} {
		out, _, _, err := st.Partition(tc.topic, tc.partition).ReadBatch(tc.offset, []byte("kept"))
		if !errors.Is(err, broker.ErrStorageRange) || string(out) != "kept" {
			t.Errorf("%s/%d offset %d: %q, %v; want ErrStorageRange and dst untouched", tc.topic, tc.partition, tc.offset, out, err)
		}
		if _, err := st.Partition(tc.topic, tc.partition).ViewBatch(tc.offset); !errors.Is(err, broker.ErrStorageRange) {
			t.Errorf("%s/%d offset %d: view: %v; want ErrStorageRange", tc.topic, tc.partition, tc.offset, err)
		}
	}
}

func testConcurrentAppends(t *testing.T, open Opener, _ Options) {
	st, _ := openFresh(t, open)
	const writers, each = 4, 50
	var (
		mu  sync.Mutex
		all []stored
		wg  sync.WaitGroup
	)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				bs := []broker.StorageBatch{batch("shared", 0, 1, w*each+i), batch("own", int32(w), 2, i)}
				at, err := st.Append(nil, bs)
				if err != nil || len(at) != 2 {
					t.Errorf("writer %d: %v", w, err)
					return
				}
				mu.Lock()
				for j, b := range bs {
					all = append(all, stored{b.Topic, b.Partition, b.Count, slices.Clone(b.Records), at[j]})
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	// Concurrent callers' ends need not follow their offsets (the Kafka
	// layout counts its ends apart from its partitions' order).
	slices.SortFunc(all, func(a, b stored) int { return int(a.at.Base - b.at.Base) })
	checkDense(t, all, false)
	waitIndexed(t, st, slices.MaxFunc(all, func(a, b stored) int { return int(a.at.End - b.at.End) }).at.End)
	checkRead(t, st, all)
}

func testWaiter(t *testing.T, open Opener, _ Options) {
	st, _ := openFresh(t, open)
	appendAll(t, st, []broker.StorageBatch{batch("w", 0, 1, 0)})

	ready := st.NewWaiter()
	defer ready.Release()
	ready.Watch("w", 0, 0)
	expect(t, ready, true, "a watch below the end")

	w := st.NewWaiter()
	defer w.Release()
	w.Watch("w", 0, 1)
	w.Watch("w", 1, 0)
	expect(t, w, false, "a watch at the end")
	appendAll(t, st, []broker.StorageBatch{batch("w", 2, 1, 1)})
	expect(t, w, false, "growth of a partition not watched")
	appendAll(t, st, []broker.StorageBatch{batch("w", 1, 1, 2)})
	expect(t, w, true, "growth of a watched partition")

	w.Release()
	w.Watch("w", 0, 1)
	w.Release()
	appendAll(t, st, []broker.StorageBatch{batch("w", 0, 1, 3)})
	expect(t, w, false, "growth after Release")
}

// expect checks whether w signals: a signal is awaited up to waitLimit,
// its absence for a moment (a correct waiter never signals then at all).
func expect(t *testing.T, w broker.Waiter, signal bool, what string) {
	t.Helper()
	limit := 50 * time.Millisecond
	if signal {
		limit = waitLimit
	}
	select {
	case <-w.C():
		if !signal {
			t.Fatalf("%s: signalled", what)
		}
	case <-time.After(limit):
		if signal {
			t.Fatalf("%s: no signal in %v", what, limit)
		}
	}
}

func testOffsetForTime(t *testing.T, open Opener, _ Options) {
	st, _ := openFresh(t, open)
	before := time.Now().UnixMilli()
	appendAll(t, st, []broker.StorageBatch{batch("t", 0, 3, 0), batch("t", 0, 2, 1)})
	if off, ts, ok := st.OffsetForTime("t", 0, 0); !ok || off != 0 || ts < before-1000 {
		t.Errorf("from time 0: offset %d at %d, %v; want 0 at about %d", off, ts, ok, before)
	}
	if off, _, ok := st.OffsetForTime("t", 0, time.Now().Add(time.Hour).UnixMilli()); ok {
		t.Errorf("an hour ahead: offset %d; want none", off)
	}
	if off, _, ok := st.OffsetForTime("none", 0, 0); ok {
		t.Errorf("a partition never written: offset %d; want none", off)
	}
}

func testScan(t *testing.T, open Opener, opts Options) {
	st, _ := openFresh(t, open)
	all := appendAll(t, st, append(mixed(0), mixed(1)...))
	var seen []stored
	err := st.ScanRecords(0, func(topic string, _ commitlog.TopicID, partition int32, base, end int64, b []byte) {
		seen = append(seen, stored{topic: topic, partition: partition, body: slices.Clone(b), at: broker.Appended{Base: base, End: end}})
	})
	if !opts.Scans {
		if err == nil {
			t.Fatalf("ScanRecords over %d records: no error from a storage that does not replay", len(all))
		}
		return
	}
	if err != nil || len(seen) != len(all) {
		t.Fatalf("scan: %d records, %v; want %d", len(seen), err, len(all))
	}
	for i, s := range all {
		want := slices.Clone(s.body)
		binary.BigEndian.PutUint64(want, uint64(s.at.Base))
		g := seen[i]
		if g.topic != s.topic || g.partition != s.partition || g.at.Base != s.at.Base || g.at.End != s.at.End || !bytes.Equal(g.body, want) {
			t.Fatalf("record %d: %s/%d [%d, end %d) %q; want %s/%d [%d, end %d) %q", i, g.topic, g.partition, g.at.Base, g.at.End, g.body, s.topic, s.partition, s.at.Base, s.at.End, want)
		}
	}
	var from []int64
	if err := st.ScanRecords(all[2].at.End, func(_ string, _ commitlog.TopicID, _ int32, base, _ int64, _ []byte) { from = append(from, base) }); err != nil || len(from) != len(all)-3 {
		t.Fatalf("scan from the end of record 2: %d records, %v; want %d", len(from), err, len(all)-3)
	}
}

func testDeleteTopic(t *testing.T, open Opener, opts Options) {
	st, dir := openFresh(t, open)
	all := appendAll(t, st, mixed(0))
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if opts.Forget != nil {
		opts.Forget(dir, "a")
	}
	err := st.DeleteTopic(ctx, "a")
	if opts.Forget == nil {
		if err == nil {
			t.Fatal("DeleteTopic: no error from a storage that does not delete")
		}
		return
	}
	if err != nil {
		t.Fatalf("DeleteTopic: %v", err)
	}
	var other []stored
	for _, s := range all {
		if s.topic != "a" {
			other = append(other, s)
		}
	}
	checkRead(t, st, other)
	for _, p := range []int32{0, 1} {
		if lo, hi := st.Bounds("a", p); lo != 0 || hi != 0 {
			t.Errorf("a/%d after DeleteTopic: bounds [%d, %d), want [0, 0)", p, lo, hi)
		}
		if _, _, _, err := st.Partition("a", p).ReadBatch(0, nil); !errors.Is(err, broker.ErrStorageRange) {
			t.Errorf("a/%d after DeleteTopic: read %v, want ErrStorageRange", p, err)
		}
	}
}

func testReopen(t *testing.T, open Opener, opts Options) {
	dir := t.TempDir()
	st := open(t, dir)
	all := appendAll(t, st, append(mixed(0), mixed(1)...))
	end := st.WriteOffset()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = open(t, dir)
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	if w := st.WriteOffset(); w < end {
		t.Fatalf("write offset %d after reopening, %d before", w, end)
	}
	checkRead(t, st, all)
	all = append(all, appendAll(t, st, mixed(2))...)
	checkDense(t, all, true)
	checkRead(t, st, all)
}

func testStats(t *testing.T, open Opener, _ Options) {
	st, _ := openFresh(t, open)
	appendAll(t, st, mixed(0))
	if s := st.Stats(); s.LogBytes <= 0 || s.WriteFailed {
		t.Errorf("stats after appends: %+v", s)
	}
}

func testTruncate(t *testing.T, open Opener, opts Options) {
	st, _ := openFresh(t, open)
	all := appendAll(t, st, append(mixed(0), mixed(1)...))
	if !opts.Replicates {
		if err := st.Truncate(all[3].at.End); !errors.Is(err, store.ErrUnsupported) {
			t.Errorf("Truncate: %v, want store.ErrUnsupported", err)
		}
		if err := st.Restart(st.WriteOffset(), nil); !errors.Is(err, store.ErrUnsupported) {
			t.Errorf("Restart: %v, want store.ErrUnsupported", err)
		}
		if _, err := st.LeaderEpochs(); !errors.Is(err, store.ErrUnsupported) {
			t.Errorf("LeaderEpochs: %v, want store.ErrUnsupported", err)
		}
		checkRead(t, st, all)
		return
	}
	if _, err := st.LeaderEpochs(); err != nil {
		t.Fatalf("LeaderEpochs: %v", err)
	}
	// Cut after the fourth record: what follows is gone, what precedes
	// it reads as before, and appends go on from the cut's offsets.
	kept, cut := all[:4], all[4:]
	if err := st.Truncate(kept[len(kept)-1].at.End); err != nil {
		t.Fatalf("Truncate(%d): %v", kept[len(kept)-1].at.End, err)
	}
	checkRead(t, st, kept)
	for _, s := range cut {
		if _, _, _, err := st.Partition(s.topic, s.partition).ReadBatch(s.at.Base, nil); !errors.Is(err, broker.ErrStorageRange) {
			t.Errorf("%s/%d offset %d after the cut: %v, want ErrStorageRange", s.topic, s.partition, s.at.Base, err)
		}
	}
	for k, end := range checkDense(t, kept, true) {
		if lo, hi := st.Bounds(k.topic, k.partition); lo != 0 || hi != end {
			t.Errorf("%s after the cut: bounds [%d, %d), want [0, %d)", k, lo, hi, end)
		}
	}
	kept = append(kept, appendAll(t, st, mixed(2))...)
	checkDense(t, kept, true)
	checkRead(t, st, kept)
}

func testAppendAt(t *testing.T, open Opener, opts Options) {
	st, _ := openFresh(t, open)
	moved := batch("a", 3, 2, 0)
	if !opts.Moves {
		if _, err := st.AppendAt(nil, moved, 100); !errors.Is(err, store.ErrUnsupported) {
			t.Errorf("AppendAt: %v, want store.ErrUnsupported", err)
		}
		return
	}
	all := appendAll(t, st, mixed(0))
	// An empty partition starts at the source's offset; the next batch
	// must follow it, and a plain append goes on from there.
	at, err := st.AppendAt(nil, moved, 100)
	if err != nil || len(at) != 1 || at[0].Base != 100 {
		t.Fatalf("AppendAt(100) into an empty partition: %+v, %v", at, err)
	}
	all = append(all, stored{"a", 3, 2, slices.Clone(moved.Records), at[0]})
	if next := st.NextOffset("a", 3); next != 102 {
		t.Errorf("NextOffset after AppendAt: %d, want 102", next)
	}
	for _, base := range []int64{101, 105} {
		if _, err := st.AppendAt(nil, batch("a", 3, 1, 1), base); !errors.Is(err, broker.ErrStorageOffset) {
			t.Errorf("AppendAt(%d) after 102: %v, want ErrStorageOffset", base, err)
		}
	}
	if _, err := st.AppendAt(nil, batch("a", 0, 1, 1), 50); !errors.Is(err, broker.ErrStorageOffset) {
		t.Errorf("AppendAt(50) into a partition holding records: %v, want ErrStorageOffset", err)
	}
	all = append(all, appendAll(t, st, []broker.StorageBatch{batch("a", 3, 1, 2)})...)
	if all[len(all)-1].at.Base != 102 {
		t.Errorf("append after AppendAt at %d, want 102", all[len(all)-1].at.Base)
	}
	waitIndexed(t, st, all[len(all)-1].at.End)
	checkRead(t, st, all)
	if lo, hi := st.Bounds("a", 3); lo != 100 || hi != 103 {
		t.Errorf("moved partition: bounds [%d, %d), want [100, 103)", lo, hi)
	}
}
