package broker

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestGroupTransactSession copies a topic to another through franz-go's
// GroupTransactSession, the consume-transform-produce loop of
// exactly-once pipelines: the consumed offsets are committed in the
// transaction that produces the copies. Every other transaction of the
// first session is aborted, and the first session stops halfway; the
// second goes on from the offsets the first committed. A read_committed
// consumer of the copy sees every input record exactly once: an aborted
// transaction's copies are never seen and its input is consumed again,
// and a committed transaction's input is never consumed again.
func TestGroupTransactSession(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.Logger = failureLogger(t)
	b := startBroker(t, cfg)
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "in", 3)
	createTopic(t, cl, "out", 3)
	const n = 600
	ctx := testCtx(t)
	for i := range n {
		r := &kgo.Record{Topic: "in", Partition: int32(i % 3), Value: []byte(fmt.Sprint(i))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	copied := 0 // input records whose copies a committed transaction holds
	run := func(name string, stopAt int, abortEvery int) {
		t.Helper()
		sess, err := kgo.NewGroupTransactSession(
			kgo.SeedBrokers(b.Addr()), kgo.TransactionalID(name), kgo.ConsumerGroup("copy"), kgo.ConsumeTopics("in"),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.DefaultProduceTopic("out"),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.FetchMaxWait(100*time.Millisecond),
			kgo.FetchMaxPartitionBytes(200), // several transactions per partition
			kgo.WithLogger(kgo.BasicLogger(testWriter{t}, kgo.LogLevelInfo, func() string { return name + " " })),
		)
		if err != nil {
			t.Fatal(err)
		}
		defer sess.Close()
		for txns := 0; copied < stopAt; txns++ {
			pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			fs := sess.PollFetches(pctx)
			cancel()
			if ctx.Err() != nil {
				t.Fatalf("%s: copied %d of %d: %v", name, copied, stopAt, ctx.Err())
			}
			recs := fs.Records()
			if len(recs) == 0 {
				continue
			}
			if err := sess.Begin(); err != nil {
				t.Fatal(err)
			}
			var failed atomic.Int32
			for _, r := range recs {
				sess.Produce(ctx, &kgo.Record{Partition: r.Partition, Value: r.Value}, func(_ *kgo.Record, err error) {
					if err != nil && !errors.Is(err, kgo.ErrAborting) {
						failed.Add(1)
						t.Errorf("produce: %v", err)
					}
				})
			}
			abort := abortEvery > 0 && txns%abortEvery == 0
			committed, err := sess.End(ctx, kgo.TransactionEndTry(!abort))
			if err != nil {
				t.Fatalf("%s: end transaction: %v", name, err)
			}
			if n := failed.Load(); n > 0 {
				t.Fatalf("%s: transaction %d (committed %v) had %d of %d produces refused", name, txns, committed, n, len(recs))
			}
			if committed {
				copied += len(recs)
			}
		}
	}
	run("copy-1", n/2, 2)
	run("copy-2", n, 0)
	if copied != n {
		t.Fatalf("%d input records copied in committed transactions, want %d", copied, n)
	}
	seen := countValues(t, b.Addr(), "out", n, true)
	for i := range n {
		if c := seen[fmt.Sprint(i)]; c != 1 {
			t.Errorf("input %d copied %d times", i, c)
		}
	}
}
