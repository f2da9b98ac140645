package broker

import (
	"encoding/binary"
	"io"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestProducePipelined: a produce read while the one before it on the
// connection waits (here for replication) is appended at once, not after
// that one's answer, and the answers, with a request of another kind
// behind them, still leave in request order.
func TestProducePipelined(t *testing.T) {
	repl := newFakeReplication()
	cfg := testConfig(t, t.TempDir())
	cfg.Replication, cfg.SyncReplication = repl, true
	b := startBroker(t, cfg)
	createTopic(t, newClient(t, b.Addr()), "pipe", 2)

	raw := dialRaw(t, b.Addr())
	for p := range int32(2) {
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = 7, -1, 30_000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "pipe"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, rawBatch(-1, -1, 0, "x")
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		if err := raw.write(raw.frame(req)); err != nil {
			t.Fatal(err)
		}
	}
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 4
	if err := raw.write(raw.frame(meta)); err != nil {
		t.Fatal(err)
	}

	// The first produce waits for followers that never answer until
	// told; the second must be stored meanwhile.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, hi := b.st.Bounds("pipe", 1); hi > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second produce was not appended while the first waited")
		}
	}
	repl.set(1<<62, nil)

	for corr := int32(1); corr <= 3; corr++ {
		var size [4]byte
		if _, err := io.ReadFull(raw.nc, size[:]); err != nil {
			t.Fatalf("response %d: %v", corr, err)
		}
		body := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(raw.nc, body); err != nil {
			t.Fatalf("response %d: %v", corr, err)
		}
		if got := int32(binary.BigEndian.Uint32(body)); got != corr {
			t.Fatalf("response with correlation id %d, want %d: out of order", got, corr)
		}
		if corr == 3 {
			break
		}
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = 7
		if err := resp.ReadFrom(body[4:]); err != nil {
			t.Fatal(err)
		}
		if rp := resp.Topics[0].Partitions[0]; rp.ErrorCode != 0 || rp.BaseOffset != 0 {
			t.Errorf("produce %d: error %d, base offset %d", corr, rp.ErrorCode, rp.BaseOffset)
		}
	}
}

// TestProducePipelinedAcksZero: an acks=0 produce arriving while an
// earlier produce waits is stored and leaves that one waiting (it has no
// answer of its own to order), and the next answers still come in order.
func TestProducePipelinedAcksZero(t *testing.T) {
	repl := newFakeReplication()
	cfg := testConfig(t, t.TempDir())
	cfg.Replication, cfg.SyncReplication = repl, true
	b := startBroker(t, cfg)
	createTopic(t, newClient(t, b.Addr()), "pipe0", 3)

	raw := dialRaw(t, b.Addr())
	produce := func(partition int32, acks int16) {
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = 7, acks, 30_000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "pipe0"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = partition, rawBatch(-1, -1, 0, "x")
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		if err := raw.write(raw.frame(req)); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if _, hi := b.st.Bounds("pipe0", partition); hi > 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the produce to partition %d was not stored", partition)
			}
		}
	}
	// Each is sent once the one before is stored, so that the first
	// waits on its own when the others arrive.
	produce(0, -1)
	produce(1, 0)
	produce(2, -1)
	repl.set(1<<62, nil)

	for _, corr := range []int32{1, 3} {
		var size [4]byte
		if _, err := io.ReadFull(raw.nc, size[:]); err != nil {
			t.Fatalf("response %d: %v", corr, err)
		}
		body := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(raw.nc, body); err != nil {
			t.Fatalf("response %d: %v", corr, err)
		}
		if got := int32(binary.BigEndian.Uint32(body)); got != corr {
			t.Fatalf("response with correlation id %d, want %d", got, corr)
		}
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = 7
		if err := resp.ReadFrom(body[4:]); err != nil {
			t.Fatal(err)
		}
		if rp := resp.Topics[0].Partitions[0]; rp.ErrorCode != 0 {
			t.Errorf("produce %d: error %d", corr, rp.ErrorCode)
		}
	}
}
