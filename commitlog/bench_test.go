package commitlog

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

var (
	benchFileSize = flag.Int64("commitlog.filesize", 64<<20, "FileSize of the logs the append benchmarks write")
	benchDir      = flag.String("commitlog.dir", "", "directory for benchmark logs (default: a temporary directory)")
	recoverBytes  = flag.Int64("commitlog.recoverbytes", 256<<20, "bytes of log BenchmarkRecover scans")
)

func benchLog(b *testing.B, mode FlushMode) *Log {
	b.Helper()
	dir := b.TempDir()
	if *benchDir != "" {
		var err error
		if dir, err = os.MkdirTemp(*benchDir, "commitlog-bench-"); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
	}
	opts := testOptions(b, dir, *benchFileSize)
	opts.FlushMode = mode
	l := openLog(b, opts)
	b.Cleanup(func() { l.Close() })
	return l
}

func benchMessages(n, body int) []Message {
	ms := make([]Message, n)
	payload := make([]byte, body)
	for i := range payload {
		payload[i] = byte(i)
	}
	for i := range ms {
		ms[i] = Message{Topic: "bench", Partition: int32(i % 16), ProducerTimestamp: 1, Key: []byte("key"), Body: payload}
	}
	return ms
}

// BenchmarkAppend: one op is one record in every variant, so
// -benchtime=4000000x writes 4M records whatever the batch size. The
// reported bytes are encoded record bytes, i.e. log bandwidth.
func BenchmarkAppend(b *testing.B) {
	for _, mode := range []FlushMode{FlushAsync, FlushSync} {
		for _, body := range []int{100, 1 << 10, 16 << 10} {
			for _, batch := range []int{1, 64, 256} {
				b.Run(fmt.Sprintf("%v/body=%d/batch=%d", mode, body, batch), func(b *testing.B) {
					if mode == FlushSync {
						benchAppendSync(b, body, batch)
						return
					}
					benchAppendAsync(b, body, batch)
				})
			}
		}
	}
}

func benchAppendAsync(b *testing.B, body, batch int) {
	l := benchLog(b, FlushAsync)
	ms := benchMessages(batch, body)
	b.SetBytes(int64(EncodedSize(&ms[0])))
	pos := make([]Position, 0, batch)
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := time.Now(), processCPU(b)
	for done := 0; done < b.N; done += batch {
		n := min(batch, b.N-done)
		var err error
		if pos, err = l.AppendBatchTo(pos[:0], ms[:n]); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportCPU(b, cpu0, int64(b.N)*int64(EncodedSize(&ms[0])))
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
	s := l.Stats()
	b.ReportMetric(float64(s.SyncAllocs), "sync-allocs")
	b.ReportMetric(s.PreallocWait.Seconds()*1000, "prealloc-wait-ms")
}

// benchAppendSync has 16 goroutines per CPU append and wait for
// durability, as concurrent producers in sync mode do.
func benchAppendSync(b *testing.B, body, batch int) {
	l := benchLog(b, FlushSync)
	b.SetBytes(int64(EncodedSize(&benchMessages(1, body)[0])))
	var next atomic.Int64
	b.SetParallelism(16)
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := time.Now(), processCPU(b)
	b.RunParallel(func(pb *testing.PB) {
		ms := benchMessages(batch, body)
		pos := make([]Position, 0, batch)
		for pb.Next() {
			// pb counts ops one record each; claim a whole batch per call.
			if next.Add(1)%int64(batch) != 0 && batch > 1 {
				continue
			}
			var err error
			if pos, err = l.AppendBatchTo(pos[:0], ms); err != nil {
				b.Error(err)
				return
			}
			if err := l.WaitDurable(context.Background(), pos[len(pos)-1].End()); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	reportCPU(b, cpu0, int64(b.N)*int64(EncodedSize(&benchMessages(1, body)[0])))
	s := l.Stats()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
	b.ReportMetric(float64(s.DurableWaits)/float64(max(s.Flushes, 1)), "waiters/flush")
	b.ReportMetric(float64(b.N/batch)/float64(max(s.Writes, 1)), "batches/write")
}

// processCPU is the user+system CPU time of the whole process so far: the
// appender and the log's own goroutines (preallocator, flusher), whose
// work a wall-clock figure on a shared machine hides.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the process CPU time since cpu0 per GB (10^9 bytes)
// of encoded records written.
func reportCPU(b *testing.B, cpu0 time.Duration, bytes int64) {
	b.ReportMetric((processCPU(b)-cpu0).Seconds()/(float64(bytes)/1e9), "cpu-s/GB")
}

// BenchmarkRecover measures the crash-recovery scan rate over a log of
// -commitlog.recoverbytes (page cache warm: this is the CPU cost).
func BenchmarkRecover(b *testing.B) {
	for _, body := range []int{100, 1 << 10} {
		b.Run(fmt.Sprintf("body=%d", body), func(b *testing.B) {
			dir := b.TempDir()
			opts := testOptions(b, dir, 64<<20)
			l := openLog(b, opts)
			ms := benchMessages(256, body)
			for l.WriteOffset() < *recoverBytes {
				if _, err := l.AppendBatch(ms); err != nil {
					b.Fatal(err)
				}
			}
			size := l.WriteOffset()
			if err := l.Close(); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(size)
			b.ReportAllocs()
			b.ResetTimer()
			var records int64
			for i := 0; i < b.N; i++ {
				l, err := Open(opts)
				if err != nil {
					b.Fatal(err)
				}
				records = 0
				end, err := l.Recover(0, func(*Record) error { records++; return nil })
				if err != nil || end != size {
					b.Fatalf("Recover = %d, %v; want %d", end, err, size)
				}
				l.Close()
			}
			b.ReportMetric(float64(records), "records")
		})
	}
}

// BenchmarkAppendParallel has 8 goroutines per CPU append one record per
// call without waiting for durability, as the broker's connections do at
// one partition: the case group commit (appendGroup) coalesces.
func BenchmarkAppendParallel(b *testing.B) {
	for _, body := range []int{1 << 10, 16 << 10} {
		b.Run(fmt.Sprintf("body=%d", body), func(b *testing.B) {
			l := benchLog(b, FlushAsync)
			size := int64(EncodedSize(&benchMessages(1, body)[0]))
			b.SetBytes(size)
			b.SetParallelism(8)
			b.ReportAllocs()
			b.ResetTimer()
			start, cpu0 := time.Now(), processCPU(b)
			b.RunParallel(func(pb *testing.PB) {
				ms := benchMessages(1, body)
				pos := make([]Position, 0, 1)
				for pb.Next() {
					var err error
					if pos, err = l.AppendBatchTo(pos[:0], ms); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			reportCPU(b, cpu0, int64(b.N)*size)
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
			b.ReportMetric(float64(b.N)/float64(max(l.Stats().Writes, 1)), "batches/write")
		})
	}
}
