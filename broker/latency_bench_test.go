package broker

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/unilog/unilog/commitlog"
)

// BenchmarkProduceLatency measures the latency of single-record produces
// with acks=-1 from 16 concurrent producers spread over 1,000 partitions,
// so that every checkpoint has hundreds of consume-queue files to make
// durable. It reports p50, p99 and p999 in microseconds; b.N is the number
// of records (use -benchtime 20000x or more so p999 rests on 20 samples).
//
//	go test -run '^$' -bench BenchmarkProduceLatency -benchtime 20000x ./broker/
func BenchmarkProduceLatency(b *testing.B) {
	const (
		partitions = 1000
		producers  = 16
	)
	for _, mode := range []commitlog.FlushMode{commitlog.FlushAsync, commitlog.FlushSync} {
		b.Run("flush="+mode.String(), func(b *testing.B) {
			cfg := testConfig(b, b.TempDir())
			so := testStore()
			so.CommitLog.FlushMode, so.CommitLog.FileSize = mode, 256<<20
			br := startBrokerWith(b, cfg, so)
			admin := newClient(b, br.Addr())
			createTopic(b, admin, "lat", partitions)
			cl := newClient(b, br.Addr(), kgo.DefaultProduceTopic("lat"), kgo.RequiredAcks(kgo.AllISRAcks()),
				kgo.ProducerLinger(0), kgo.MaxBufferedRecords(producers*2))
			ctx := testCtx(b)
			value := make([]byte, 200)
			lat := make([]time.Duration, b.N)
			var next atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, producers)
			b.ResetTimer()
			for range producers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						r := &kgo.Record{Partition: int32(i * 7919 % partitions), Value: value}
						start := time.Now()
						if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
							errs <- fmt.Errorf("record %d: %w", i, err)
							return
						}
						lat[i] = time.Since(start)
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
			slices.Sort(lat)
			q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Microsecond) }
			b.ReportMetric(q(0.50), "p50-µs")
			b.ReportMetric(q(0.99), "p99-µs")
			b.ReportMetric(q(0.999), "p999-µs")
			b.ReportMetric(float64(lat[len(lat)-1])/float64(time.Microsecond), "max-µs")
		})
	}
}
