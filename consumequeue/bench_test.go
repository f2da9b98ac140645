package consumequeue

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"
)

func BenchmarkAppend(b *testing.B) {
	b.Run("single", func(b *testing.B) {
		s := openStore(b, b.TempDir(), 0, 0)
		q := mustQueue(b, s, "t", 0)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range int64(b.N) {
			if err := q.Append(i, entryAt(i)); err != nil {
				b.Fatal(err)
			}
		}
	})
	// One batch's records at a time into one queue, as the dispatcher
	// indexes a batch of a producer to one partition (AppendRange: one
	// entry per record, the batch's phys offset for each). ns/op is per
	// entry.
	for _, batch := range []int64{10, 100, 1000} {
		b.Run(fmt.Sprintf("range-%d", batch), func(b *testing.B) {
			s := openStore(b, b.TempDir(), 0, 0)
			q := mustQueue(b, s, "t", 0)
			b.ReportAllocs()
			b.ResetTimer()
			for off := int64(0); off < int64(b.N); off += batch {
				n := min(batch, int64(b.N)-off)
				if err := q.AppendRange(off, n, entryAt(off)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// 10,000 partitions round-robin, all mapped; then with MaxMapped a
	// tenth of that, so that every append misses the LRU and evicts.
	for _, bc := range []struct {
		name      string
		maxMapped int
	}{{"10000partitions", 0}, {"10000partitions-thrash", 1000}} {
		b.Run(bc.name, func(b *testing.B) {
			const parts = 10_000
			s := openStore(b, b.TempDir(), 0, bc.maxMapped)
			qs := make([]*Queue, parts)
			for p := range qs {
				qs[p] = mustQueue(b, s, "t", int32(p))
				appendRange(b, qs[p], 0, 1) // file creation is not what this measures
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				q := qs[i%parts]
				off := int64(i/parts) + 1
				if err := q.Append(off, entryAt(off)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func benchQueue(b *testing.B, n int64) *Queue {
	s := openStore(b, b.TempDir(), 0, 0)
	q := mustQueue(b, s, "t", 0)
	appendRange(b, q, 0, n)
	return q
}

func BenchmarkGet(b *testing.B) {
	const n = 1_000_000
	q := benchQueue(b, n)
	b.Run("serial", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(1, 2))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := q.Get(rng.Int64N(n)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			rng := rand.New(rand.NewPCG(rand.Uint64(), 2))
			for pb.Next() {
				if _, err := q.Get(rng.Int64N(n)); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}

func BenchmarkOffsetForTime(b *testing.B) {
	const n = 1_000_000
	q := benchQueue(b, n)
	rng := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	for b.Loop() {
		q.OffsetForTime(1000 + rng.Int64N(n/3))
	}
}

// BenchmarkOpen10000 measures opening a store with 10,000 existing
// partitions: Open itself, then listing them, then opening every queue
// (what a broker does when it first reports every partition's offsets).
func BenchmarkOpen10000(b *testing.B) {
	const parts = 10_000
	dir := b.TempDir()
	s, err := Open(Options{Dir: dir, SmallEntries: -1, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	for p := range parts {
		q := mustQueue(b, s, "t", int32(p))
		appendRange(b, q, 0, 5)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	var open, list, all time.Duration
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		s, err := Open(Options{Dir: dir, SmallEntries: -1, Logger: quietLogger()})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		ids := s.Queues()
		t2 := time.Now()
		for _, id := range ids {
			q, ok := s.Lookup(id.Topic, id.Partition)
			if !ok || q.MaxOffset() != 5 {
				b.Fatal("queue lost")
			}
		}
		t3 := time.Now()
		open += t1.Sub(t0)
		list += t2.Sub(t1)
		all += t3.Sub(t2)
		b.StopTimer()
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(open.Microseconds())/float64(b.N), "open-µs")
	b.ReportMetric(float64(list.Milliseconds())/float64(b.N), "list-ms")
	b.ReportMetric(float64(all.Milliseconds())/float64(b.N), "open-all-ms")
}

// BenchmarkCreate50000 creates 50,000 queues and appends one entry to each,
// then flushes: the first run of a producer that keys records over a topic
// of 50,000 partitions. "files" gives every queue its directory and file
// from the start (a directory, a file, its allocation and header, a
// mapping each); "journal" keeps them small, in memory and the journal.
func BenchmarkCreate50000(b *testing.B) {
	const parts = 50_000
	for _, bc := range []struct {
		name  string
		small int
	}{{"files", -1}, {"journal", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				s, err := Open(Options{Dir: b.TempDir(), SmallEntries: bc.small, Logger: quietLogger()})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				for p := range int32(parts) {
					q, err := s.Queue("wide", p)
					if err != nil {
						b.Fatal(err)
					}
					if err := q.Append(0, entryAt(0)); err != nil {
						b.Fatal(err)
					}
				}
				if err := s.Flush(); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkAppendAcrossFlushes appends one entry to each of 10,000 queues
// per pass and flushes the store after every `passes` passes, as the
// dispatcher's checkpoint does. Writeback write-protects every page it
// cleans, so the first entry after a flush in each queue maps its tail
// pages again (remapTailLocked; a write fault each before): the
// faults/entry metric, which counts those pages as faults, is about
// 1/passes, and append-ns/entry (the appends alone, not the flush) shows
// what they cost.
// One op is the passes and their flush.
func BenchmarkAppendAcrossFlushes(b *testing.B) {
	const parts = 10_000
	for _, passes := range []int{1, 10} {
		b.Run(fmt.Sprintf("flush-every-%d", passes), func(b *testing.B) {
			s := openStore(b, b.TempDir(), 0, 0)
			qs := make([]*Queue, parts)
			for p := range qs {
				qs[p] = mustQueue(b, s, "t", int32(p))
				appendRange(b, qs[p], 0, 1) // file creation is not what this measures
			}
			if err := s.Flush(); err != nil {
				b.Fatal(err)
			}
			var appending time.Duration
			var faults int64
			next := int64(1)
			for b.Loop() {
				f0, t0 := minorFaults(b), time.Now()
				for range passes {
					for _, q := range qs {
						if err := q.Append(next, entryAt(next)); err != nil {
							b.Fatal(err)
						}
					}
					next++
				}
				appending += time.Since(t0)
				faults += minorFaults(b) - f0
				if err := s.Flush(); err != nil {
					b.Fatal(err)
				}
			}
			entries := float64(b.N * passes * parts)
			b.ReportMetric(float64(appending.Nanoseconds())/entries, "append-ns/entry")
			b.ReportMetric(float64(faults)/entries, "faults/entry")
		})
	}
}

// minorFaults is the process's minor page faults so far.
func minorFaults(b *testing.B) int64 { return rusage(b, syscall.RUSAGE_SELF).Minflt }

// rusage is the resource usage so far of the process (RUSAGE_SELF) or
// the calling thread (RUSAGE_THREAD).
func rusage(tb testing.TB, who int) syscall.Rusage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		tb.Fatal(err)
	}
	return ru
}

// BenchmarkPromoteBurst appends round robin to 10,000 new queues, as a
// producer spreading records over a new topic does, until every queue has
// been promoted to files. The dispatcher makes these appends, and produce
// acknowledgements wait on it, so the longest pass over the queues is the
// stall a producer sees: max-pass-ms, with every queue promoted at
// SmallEntries ("at-once") and with the default PromoteSpread ("spread").
// The promoter's work is not in the passes; cpu-ms is the whole process's
// CPU time over the run, the promoter's included.
// One op is the whole run.
func BenchmarkPromoteBurst(b *testing.B) {
	const parts = 10_000
	for _, bc := range []struct {
		name   string
		spread int
	}{{"at-once", -1}, {"spread", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			var worst, total, cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				s, err := Open(Options{Dir: b.TempDir(), SmallEntries: DefaultSmallEntries, PromoteSpread: bc.spread, Logger: quietLogger()})
				if err != nil {
					b.Fatal(err)
				}
				qs := make([]*Queue, parts)
				for p := range qs {
					qs[p] = mustQueue(b, s, "t", int32(p))
				}
				b.StartTimer()
				ru0 := rusage(b, syscall.RUSAGE_SELF)
				for off := range int64(DefaultSmallEntries + 1) {
					t0 := time.Now()
					for _, q := range qs {
						if err := q.Append(off, entryAt(off)); err != nil {
							b.Fatal(err)
						}
					}
					d := time.Since(t0)
					worst = max(worst, d)
					total += d
				}
				b.StopTimer()
				waitPromotions(b, s)
				ru1 := rusage(b, syscall.RUSAGE_SELF)
				cpu += time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
				for _, q := range qs {
					if q.small.Load() {
						b.Fatal("a queue was not promoted")
					}
				}
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(worst.Milliseconds()), "max-pass-ms")
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "total-ms")
			b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms")
		})
	}
}

// BenchmarkLookup finds queues of a store holding a million small ones
// (10 topics of 100,000 partitions), in a scattered order, as the broker
// does for the batches of a produce over many partitions.
func BenchmarkLookup(b *testing.B) {
	dir := b.TempDir()
	s, err := Open(Options{Dir: dir, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const topics, parts = 10, 100_000
	names := make([]string, topics)
	for t := range names {
		names[t] = fmt.Sprintf("m%d", t)
		for p := range int32(parts) {
			if _, err := s.Queue(names[t], p); err != nil {
				b.Fatal(err)
			}
		}
	}
	i := 0
	for b.Loop() {
		n := uint32(i) * 2654435761
		if _, ok := s.Lookup(names[n%topics], int32(n/topics%parts)); !ok {
			b.Fatal("queue missing")
		}
		i++
	}
}
