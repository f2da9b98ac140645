package broker

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/txn"
)

// slowISR is a sync replication whose next timeouts waits time out, as
// a follower too slow for the request's timeout makes them.
type slowISR struct {
	shortISR
	timeouts atomic.Int32
}

func (*slowISR) CheckInSync() error { return nil }
func (s *slowISR) WaitReplicated(context.Context, int64) error {
	if s.timeouts.Add(-1) >= 0 {
		return context.DeadlineExceeded
	}
	return nil
}

// TestWriteTxnMarkersRetryStoresOnce: a marker stored whose wait timed
// out is sent again by the coordinator; the retry is answered success
// without a second control batch of the transaction in the partition. A
// marker of an epoch older than the producer's in the partition is
// INVALID_PRODUCER_EPOCH and stores nothing. Before markers were checked
// against the partition's producer state each of them added a batch.
func TestWriteTxnMarkersRetryStoresOnce(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	isr := &slowISR{}
	cfg.Replication, cfg.SyncReplication = isr, true
	b := startBroker(t, cfg)
	c := dialRaw(t, b.Addr())
	createSpan(t, b.Addr())
	id := "retried"
	pid, epoch := openTxnIn(t, c, id, "span", 0)
	marker := func(epoch int16, commit bool) int16 {
		t.Helper()
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed = pid, epoch, commit
		m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: "span", Partitions: []int32{0}}}
		req.Markers = append(req.Markers, m)
		return call(t, c, req).(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode
	}
	for _, step := range []struct {
		what     string
		epoch    int16
		commit   bool
		timeouts int32
		want     int16
		controls int
	}{
		{"the commit, its wait timed out", epoch, true, 1, kerr.RequestTimedOut.Code, 1},
		{"its retry", epoch, true, 0, 0, 1},
		{"its retry as an abort", epoch, false, 0, 0, 1},
		{"an abort fencing the next epoch", epoch + 1, false, 0, 0, 2},
		{"a marker of the fenced epoch", epoch, false, 0, kerr.InvalidProducerEpoch.Code, 2},
	} {
		isr.timeouts.Store(step.timeouts)
		if code := marker(step.epoch, step.commit); code != step.want {
			t.Errorf("%s: %v, want %v", step.what, kerr.ErrorForCode(code), kerr.ErrorForCode(step.want))
		}
		if n := controlBatches(t, b, "span", 0); n != step.controls {
			t.Errorf("after %s: %d control batches in span/0, want %d", step.what, n, step.controls)
		}
	}
	// The coordinator's own send of the fenced epoch's marker settles the
	// partition instead of retrying what can never succeed.
	tps := []txn.TopicPartition{{Topic: "span", Partition: 0}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	acked, err := txnRemote{b}.send(ctx, b.cfg.NodeID, txn.Markers{ProducerID: pid, Epoch: epoch}, tps)
	if err != nil || len(acked) != 1 {
		t.Errorf("coordinator's send of a stale marker: acked %v, %v; want the partition settled", acked, err)
	}
	if n := controlBatches(t, b, "span", 0); n != 2 {
		t.Errorf("after the coordinator's stale marker: %d control batches in span/0, want 2", n)
	}
}

// TestWriteTxnMarkersOneRequestInEpochOrder sends one producer's markers
// for one partition twice in a request: a marker of the epoch another
// marker of the request ends is applied, an older one is stale, a newer
// one (a bumped epoch's abort) is stored after it, as if each came alone.
func TestWriteTxnMarkersOneRequestInEpochOrder(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	c := dialRaw(t, b.Addr())
	createSpan(t, b.Addr())
	for _, tt := range []struct {
		id       string
		epochs   []int16 // added to the open transaction's epoch
		want     []int16
		controls int
	}{
		{"newer-first", []int16{1, 0}, []int16{0, kerr.InvalidProducerEpoch.Code}, 1},
		{"same-twice", []int16{0, 0}, []int16{0, 0}, 1},
		{"older-first", []int16{0, 1}, []int16{0, 0}, 2},
	} {
		t.Run(tt.id, func(t *testing.T) {
			before := controlBatches(t, b, "span", 0)
			pid, epoch := openTxnIn(t, c, tt.id, "span", 0)
			req := kmsg.NewPtrWriteTxnMarkersRequest()
			for _, e := range tt.epochs {
				m := kmsg.NewWriteTxnMarkersRequestMarker()
				m.ProducerID, m.ProducerEpoch = pid, epoch+e
				m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: "span", Partitions: []int32{0}}}
				req.Markers = append(req.Markers, m)
			}
			resp := call(t, c, req).(*kmsg.WriteTxnMarkersResponse)
			for i, m := range resp.Markers {
				if code := m.Topics[0].Partitions[0].ErrorCode; code != tt.want[i] {
					t.Errorf("marker %d (epoch +%d): %v, want %v", i, tt.epochs[i], kerr.ErrorForCode(code), kerr.ErrorForCode(tt.want[i]))
				}
			}
			if n := controlBatches(t, b, "span", 0) - before; n != tt.controls {
				t.Errorf("%d control batches stored, want %d", n, tt.controls)
			}
		})
	}
}

// controlBatches counts the control batches stored in the partition.
func controlBatches(t *testing.T, b *Broker, topic string, partition int32) int {
	t.Helper()
	n := 0
	err := eachStoredBatch(b.st.Partition(topic, partition), func(off int64, batch []byte) error {
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(batch); err != nil {
			return fmt.Errorf("offset %d: %w", off, err)
		}
		if rb.Attributes&attrControl != 0 {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatalf("read %s/%d: %v", topic, partition, err)
	}
	return n
}
