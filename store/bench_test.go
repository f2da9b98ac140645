package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/unilog/unilog/commitlog"
)

func benchOptions(dir string) Options {
	opts := testOptions(dir)
	opts.CommitLog.FileSize = 256 << 20
	opts.CommitLog.FlushInterval = 0
	opts.ConsumeQueue.EntriesPerFile = 0
	opts.CheckpointInterval = time.Second
	return opts
}

// fillLog appends n-byte-body records across partitions until the log
// holds at least total bytes, in batches of 256.
func fillLog(b *testing.B, d *Store, topic string, partitions int, body int, total int64) {
	b.Helper()
	ms := make([]commitlog.Message, 256)
	payload := make([]byte, body)
	for i := range ms {
		ms[i] = commitlog.Message{Topic: topic, Partition: int32(i % partitions), Body: payload}
	}
	for d.log.WriteOffset() < total {
		if _, err := d.log.AppendBatch(ms); err != nil {
			b.Fatal(err)
		}
	}
}

// simulateCrash makes the next Open take the crash path; without the
// checkpoint it also scans the whole log.
func simulateCrash(b *testing.B, dir string, dropCheckpoint bool) {
	b.Helper()
	if err := os.WriteFile(filepath.Join(dir, abortName), nil, 0o644); err != nil {
		b.Fatal(err)
	}
	if dropCheckpoint {
		if err := os.Remove(filepath.Join(dir, checkpointName)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCrashRecovery measures a crash recovery that scans the whole log
// (no checkpoint): verify every CRC, truncate and re-dispatch every record.
// UNILOG_BENCH_RECOVERY_BYTES sets the log size (default 1 GiB). The files
// are in the page cache after the fill, so this is the CPU-bound rate.
func BenchmarkCrashRecovery(b *testing.B) {
	total := int64(1 << 30)
	if s := os.Getenv("UNILOG_BENCH_RECOVERY_BYTES"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		total = n
	}
	for _, body := range []int{1024, 16 << 10} {
		b.Run(fmt.Sprintf("body=%d", body), func(b *testing.B) {
			dir := b.TempDir()
			d := mustOpen(b, benchOptions(dir))
			fillLog(b, d, "rec", 8, body, total)
			b.SetBytes(d.log.WriteOffset() - d.log.MinOffset())
			if err := d.Close(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				simulateCrash(b, dir, true)
				b.StartTimer()
				d = mustOpen(b, benchOptions(dir))
				b.StopTimer()
				if err := d.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkStartup10kPartitions measures Open of a data directory with
// 10,000 partitions, after a clean stop and after a crash (recovery from
// the checkpoint: truncate every queue, scan the tail).
func BenchmarkStartup10kPartitions(b *testing.B) {
	const partitions = 10_000
	dir := b.TempDir()
	d := mustOpen(b, benchOptions(dir))
	fillLog(b, d, "many", partitions, 100, 0)
	ms := make([]commitlog.Message, partitions)
	for i := range ms {
		ms[i] = commitlog.Message{Topic: "many", Partition: int32(i), Body: make([]byte, 100)}
	}
	for range 3 {
		if _, err := d.log.AppendBatch(ms); err != nil {
			b.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		b.Fatal(err)
	}
	for _, crash := range []bool{false, true} {
		b.Run(fmt.Sprintf("crash=%v", crash), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				if crash {
					simulateCrash(b, dir, false)
				}
				b.StartTimer()
				d := mustOpen(b, benchOptions(dir))
				b.StopTimer()
				if n := len(d.queues.Queues()); n != partitions {
					b.Fatalf("%d queues", n)
				}
				if err := d.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkDispatch measures how fast the dispatcher indexes a backlog of
// 100-byte records spread over 16 partitions.
func BenchmarkDispatch(b *testing.B) {
	d := mustOpen(b, benchOptions(b.TempDir()))
	defer d.Close()
	ms := make([]commitlog.Message, 1000)
	for i := range ms {
		ms[i] = commitlog.Message{Topic: "disp", Partition: int32(i % 16), Body: make([]byte, 100)}
	}
	release := holdDispatcher(b, d)
	for n := 0; n < b.N; n += len(ms) {
		if _, err := d.log.AppendBatch(ms[:min(len(ms), b.N-n)]); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	start := time.Now()
	release()
	if err := d.WaitDispatched(context.Background(), d.log.WriteOffset()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
	b.StopTimer()
	var indexed int64
	for _, id := range d.queues.Queues() {
		q, _ := d.queues.Lookup(id.Topic, id.Partition)
		indexed += q.MaxOffset()
	}
	if indexed != int64(b.N) {
		b.Fatalf("indexed %d of %d", indexed, b.N)
	}
}
