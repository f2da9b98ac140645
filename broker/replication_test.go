package broker

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/unilog/unilog/internal/poll"
)

// fakeReplication is a leader's data plane whose high watermark the test
// moves by hand.
type fakeReplication struct {
	mu      sync.Mutex
	hw      int64
	changed chan struct{}
	err     error // WaitReplicated's answer when set
	// checkErr is CheckInSync's answer: the in-sync set before an append.
	checkErr error
}

// countRecords counts the records of the record batches in b.
func countRecords(t *testing.T, b []byte) int {
	t.Helper()
	n := 0
	for len(b) > 0 {
		var rb kmsg.RecordBatch
		size := 12 + int(binary.BigEndian.Uint32(b[8:12]))
		if err := rb.ReadFrom(b[:size]); err != nil {
			t.Fatalf("record batch: %v", err)
		}
		n += int(rb.NumRecords)
		b = b[size:]
	}
	return n
}

func newFakeReplication() *fakeReplication {
	return &fakeReplication{changed: make(chan struct{})}
}

func (f *fakeReplication) HighWatermark() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hw
}

func (f *fakeReplication) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

func (f *fakeReplication) set(hw int64, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hw, f.err = hw, err
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeReplication) setCheck(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checkErr = err
}

func (f *fakeReplication) CheckInSync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.checkErr
}

func (f *fakeReplication) WaitReplicated(ctx context.Context, end int64) error {
	for {
		f.mu.Lock()
		hw, err, ch := f.hw, f.err, f.changed
		f.mu.Unlock()
		switch {
		case err != nil:
			return err
		case hw >= end:
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (f *fakeReplication) Followers() []ReplicaStatus {
	hw := f.HighWatermark()
	return []ReplicaStatus{{Node: "2", End: hw, InSync: true, Connected: true}, {Node: "3", Connected: false}}
}

// TestHighWatermarkBoundsWhatConsumersSee produces with acks=1 (which does
// not wait for followers) and checks that Fetch and ListOffsets show only
// records ending at or below the high watermark, that a long poll wakes
// when it moves, and that /status reports the followers.
func TestHighWatermarkBoundsWhatConsumersSee(t *testing.T) {
	repl := newFakeReplication()
	cfg := testConfig(t, t.TempDir())
	cfg.Replication = repl
	cfg.SyncReplication = true
	b := startBroker(t, cfg)
	cl := newClient(t, b.Addr(), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	ctx := testCtx(t)
	createTopic(t, cl, "hw", 1)

	var logEnds []int64
	for i := range 4 {
		before := b.LogEndOffset()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "hw", Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
		if b.LogEndOffset() <= before {
			t.Fatalf("produce %d did not grow the log", i)
		}
		logEnds = append(logEnds, b.LogEndOffset())
	}
	repl.set(logEnds[1], nil)

	fetch := func(ctx context.Context, offset int64, wait time.Duration) (*kmsg.FetchResponseTopicPartition, int) {
		req := kmsg.NewPtrFetchRequest()
		req.Version = 11
		req.MaxWaitMillis = int32(wait.Milliseconds())
		req.MinBytes = 1
		req.MaxBytes = 1 << 20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "hw"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset = offset
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Errorf("fetch: %v", err)
			return &kmsg.FetchResponseTopicPartition{ErrorCode: -1}, 0
		}
		p := &resp.Topics[0].Partitions[0]
		return p, countRecords(t, p.RecordBatches)
	}
	p, n := fetch(ctx, 0, 0)
	if p.ErrorCode != 0 || p.HighWatermark != 2 || n != 2 {
		t.Fatalf("fetch under a watermark after 2 records: error %d, high watermark %d, %d records", p.ErrorCode, p.HighWatermark, n)
	}
	// An offset stored but not yet replicated is not out of range.
	if p, n := fetch(ctx, 3, 0); p.ErrorCode != 0 || n != 0 {
		t.Fatalf("fetch at a stored, unreplicated offset: error %d, %d records", p.ErrorCode, n)
	}
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, "hw")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("hw", 0); o.Err != nil || o.Offset != 2 {
		t.Fatalf("ListOffsets latest %d (%v) under the watermark, want 2", o.Offset, o.Err)
	}

	// A long poll at the visible end wakes when the watermark moves: one
	// that missed the wake-up would outlive its request context.
	got := make(chan int, 1)
	go func() {
		pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		_, n := fetch(pctx, 2, time.Minute)
		got <- n
	}()
	poll.True(t, "the request holding budget", func() bool { return b.inflight.available() < b.cfg.MaxInflightBytes })
	repl.set(logEnds[3], nil)
	if n := <-got; n != 2 {
		t.Fatalf("long poll returned %d records after the watermark moved, want 2", n)
	}

	resp, err := http.Get("http://" + b.AdminAddr() + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st NodeStatus
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if len(st.InSync) != 1 || st.InSync[0].Node != "2" || len(st.Followers) != 2 || st.HighWatermark != logEnds[3] {
		t.Fatalf("/status %+v: want follower 2 in sync of 2 followers, high watermark %d", st, logEnds[3])
	}
}

// Replication errors as the fake answers them.
var (
	notEnough = fmt.Errorf("1 in sync, 2 required: %w", ErrNotEnoughReplicas)
	deposed   = fmt.Errorf("fenced: %w", ErrNotLeader)
)

// startFakeReplicated starts a broker under sync replication whose fake
// answers CheckInSync with before and WaitReplicated with after.
func startFakeReplicated(t *testing.T, before, after error) (*Broker, *fakeReplication) {
	t.Helper()
	repl := newFakeReplication()
	cfg := testConfig(t, t.TempDir())
	cfg.Replication, cfg.SyncReplication = repl, true
	b := startBroker(t, cfg)
	repl.set(0, after)
	repl.setCheck(before)
	return b, repl
}

// TestSyncReplicationAcks answers acks=-1 only once replicated, while
// acks=1 does not wait. Too few followers in sync before the append is
// NOT_ENOUGH_REPLICAS with nothing stored; after it (the record stored),
// NOT_ENOUGH_REPLICAS_AFTER_APPEND.
func TestSyncReplicationAcks(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after error // CheckInSync's and WaitReplicated's answers
		want          int16
		stored        bool
	}{
		{"not enough replicas", notEnough, notEnough, kerr.NotEnoughReplicas.Code, false},
		{"not enough replicas after the append", nil, notEnough, kerr.NotEnoughReplicasAfterAppend.Code, true},
		{"deposed", deposed, deposed, kerr.NotLeaderForPartition.Code, false},
		{"deposed after the append", nil, deposed, kerr.NotLeaderForPartition.Code, true},
		{"replicated", nil, nil, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, repl := startFakeReplicated(t, tc.before, tc.after)
			raw := dialRaw(t, b.Addr())
			createTopic(t, newClient(t, b.Addr()), "acks", 1)
			produce := func(acks int16) (*kmsg.ProduceResponse, chan struct{}) {
				req := kmsg.NewPtrProduceRequest()
				req.Version = 7
				req.Acks = acks
				req.TimeoutMillis = 30000
				rt := kmsg.NewProduceRequestTopic()
				rt.Topic = "acks"
				rp := kmsg.NewProduceRequestTopicPartition()
				rp.Records = rawBatch(-1, -1, 0, "x")
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				resp := req.ResponseKind().(*kmsg.ProduceResponse)
				done := make(chan struct{})
				if err := raw.write(raw.frame(req)); err != nil {
					t.Fatal(err)
				}
				go func() {
					defer close(done)
					raw.readResponse(resp)
				}()
				return resp, done
			}
			resp, done := produce(1)
			<-done
			if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
				t.Fatalf("acks=1: error %d, want none", code)
			}
			before := b.LogEndOffset()
			resp, done = produce(-1)
			if tc.after == nil {
				poll.True(t, "the log to grow", func() bool { return b.LogEndOffset() > before })
				select {
				case <-done:
					t.Fatal("acks=-1 answered before the record was replicated")
				default:
				}
				repl.set(b.LogEndOffset(), nil)
			}
			<-done
			if code := resp.Topics[0].Partitions[0].ErrorCode; code != tc.want {
				t.Fatalf("acks=-1: error %d, want %d", code, tc.want)
			}
			if stored := b.LogEndOffset() > before; stored != tc.stored {
				t.Fatalf("acks=-1 answered %d: stored %v, want %v", tc.want, stored, tc.stored)
			}
		})
	}
}

// TestOffsetCommitReplicationErrors: an offset commit that sync
// replication cannot make durable is answered as Kafka's coordinator
// answers it, whether the in-sync set refused it before its append or
// failed it after: COORDINATOR_NOT_AVAILABLE for too few replicas,
// NOT_COORDINATOR once this node no longer leads.
func TestOffsetCommitReplicationErrors(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after error // CheckInSync's and WaitReplicated's answers
		want          int16
	}{
		{"not enough replicas", notEnough, notEnough, kerr.CoordinatorNotAvailable.Code},
		{"not enough replicas after the append", nil, notEnough, kerr.CoordinatorNotAvailable.Code},
		{"deposed", deposed, deposed, kerr.NotCoordinator.Code},
		{"deposed after the append", nil, deposed, kerr.NotCoordinator.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := startFakeReplicated(t, tc.before, tc.after)
			createTopic(t, newClient(t, b.Addr()), "c", 1)
			if code := commitRaw(t, b.Addr(), "app", "c", 3); code != tc.want {
				t.Fatalf("commit: %v, want %v", kerr.ErrorForCode(code), kerr.ErrorForCode(tc.want))
			}
			if got := b.groups.Load().Committed("app"); len(got) != 0 {
				t.Fatalf("a failed commit is visible: %v", got)
			}
		})
	}
}
