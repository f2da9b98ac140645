package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// versionSniffer is a loopback proxy in front of the broker that records the
// api key and version of every request kafka-go sends, so the test shows
// which of its hard-coded versions it actually used.
type versionSniffer struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	seen   map[int16]map[int16]bool
}

func newVersionSniffer(t *testing.T, target string) *versionSniffer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &versionSniffer{ln: ln, target: target, seen: map[int16]map[int16]bool{}}
	t.Cleanup(func() { ln.Close() })
	go s.serve()
	return s
}

func (s *versionSniffer) serve() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		go s.proxy(c)
	}
}

func (s *versionSniffer) proxy(c net.Conn) {
	defer c.Close()
	up, err := net.Dial("tcp", s.target)
	if err != nil {
		return
	}
	defer up.Close()
	go func() {
		io.Copy(c, up)
		c.Close()
	}()
	var size [4]byte
	for {
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return
		}
		frame := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(c, frame); err != nil {
			return
		}
		if len(frame) >= 4 {
			s.record(int16(binary.BigEndian.Uint16(frame)), int16(binary.BigEndian.Uint16(frame[2:])))
		}
		if _, err := up.Write(append(size[:], frame...)); err != nil {
			return
		}
	}
}

func (s *versionSniffer) record(key, version int16) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen[key] == nil {
		s.seen[key] = map[int16]bool{}
	}
	s.seen[key][version] = true
}

func (s *versionSniffer) dial(ctx context.Context, network, _ string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, s.ln.Addr().String())
}

func (s *versionSniffer) report() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []int
	for k := range s.seen {
		keys = append(keys, int(k))
	}
	sort.Ints(keys)
	var out string
	for _, k := range keys {
		var vs []int
		for v := range s.seen[int16(k)] {
			vs = append(vs, int(v))
		}
		sort.Ints(vs)
		out += fmt.Sprintf("%s %v; ", kmsg.NameForKey(int16(k)), vs)
	}
	return out
}

// TestKafkaGo drives the broker with segmentio/kafka-go, which hard-codes
// old protocol versions, through its Conn, Writer and Reader APIs.
func TestKafkaGo(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	sn := newVersionSniffer(t, b.Addr())
	dialer := &kafka.Dialer{Timeout: 10 * time.Second, DialFunc: sn.dial}
	ctx := testCtx(t)

	conn, err := dialer.DialContext(ctx, "tcp", b.Addr())
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	defer conn.Close()
	const topic, writerTopic = "kgo-conn", "kgo-writer"
	if err := conn.CreateTopics(
		kafka.TopicConfig{Topic: topic, NumPartitions: 2, ReplicationFactor: 1},
		kafka.TopicConfig{Topic: writerTopic, NumPartitions: 4, ReplicationFactor: 1},
	); err != nil {
		t.Fatalf("CreateTopics: %v", err)
	}
	parts, err := conn.ReadPartitions(topic, writerTopic)
	if err != nil || len(parts) != 6 {
		t.Fatalf("ReadPartitions: %d partitions, %v", len(parts), err)
	}

	t.Run("Conn", func(t *testing.T) { kafkaGoConn(t, ctx, dialer, b.Addr(), topic) })
	for _, acks := range []kafka.RequiredAcks{kafka.RequireAll, kafka.RequireOne} {
		t.Run(fmt.Sprintf("Writer/acks=%d", acks), func(t *testing.T) {
			kafkaGoWriter(t, ctx, sn, dialer, b.Addr(), writerTopic, acks)
		})
	}
	if ctl, err := conn.Controller(); err != nil || int32(ctl.ID) != b.cfg.NodeID {
		t.Fatalf("Controller = %+v, %v", ctl, err)
	}
	if err := conn.DeleteTopics(topic); err != nil {
		t.Fatalf("DeleteTopics: %v", err)
	}
	if _, err := conn.ReadPartitions(topic); err == nil {
		t.Fatal("ReadPartitions of a deleted topic succeeded")
	}
	t.Logf("kafka-go sent: %s", sn.report())
}

func kafkaGoConn(t *testing.T, ctx context.Context, dialer *kafka.Dialer, addr, topic string) {
	lc, err := dialer.DialLeader(ctx, "tcp", addr, topic, 1)
	if err != nil {
		t.Fatalf("DialLeader: %v", err)
	}
	defer lc.Close()
	lc.SetDeadline(time.Now().Add(30 * time.Second))

	before := time.Now().Add(-time.Second)
	base := time.UnixMilli(time.Now().UnixMilli())
	var want []kafka.Message
	codecs := []kafka.CompressionCodec{nil, kafka.Gzip.Codec(), kafka.Snappy.Codec(), kafka.Lz4.Codec(), kafka.Zstd.Codec()}
	for i, codec := range codecs {
		var msgs []kafka.Message
		for j := range 3 {
			n := i*3 + j
			msgs = append(msgs, kafka.Message{
				Key:     []byte(fmt.Sprintf("k%d", n)),
				Value:   []byte(fmt.Sprintf("v%d", n)),
				Headers: []kafka.Header{{Key: "h", Value: []byte{byte(n)}}},
				Time:    base.Add(time.Duration(n) * time.Millisecond),
			})
		}
		if codec == nil {
			_, err = lc.WriteMessages(msgs...)
		} else {
			_, err = lc.WriteCompressedMessages(codec, msgs...)
		}
		if err != nil {
			t.Fatalf("write %d (codec %v): %v", i, codec, err)
		}
		want = append(want, msgs...)
	}

	first, err := lc.ReadFirstOffset()
	if err != nil || first != 0 {
		t.Fatalf("ReadFirstOffset = %d, %v", first, err)
	}
	last, err := lc.ReadLastOffset()
	if err != nil || last != int64(len(want)) {
		t.Fatalf("ReadLastOffset = %d, %v, want %d", last, err, len(want))
	}
	if off, err := lc.ReadOffset(before); err != nil || off != 0 {
		t.Fatalf("ReadOffset(before) = %d, %v", off, err)
	}
	// Kafka answers a time after every record with offset -1.
	if off, err := lc.ReadOffset(time.Now().Add(time.Hour)); err != nil || off != -1 {
		t.Fatalf("ReadOffset(future) = %d, %v, want -1", off, err)
	}

	if _, err := lc.Seek(0, kafka.SeekAbsolute); err != nil {
		t.Fatalf("Seek: %v", err)
	}
	var got []kafka.Message
	for len(got) < len(want) {
		batch := lc.ReadBatch(1, 1<<20)
		for {
			m, err := batch.ReadMessage()
			if err != nil {
				break
			}
			got = append(got, m)
		}
		if err := batch.Close(); err != nil {
			t.Fatalf("ReadBatch after %d messages: %v", len(got), err)
		}
	}
	for i, m := range got {
		w := want[i]
		if m.Offset != int64(i) || string(m.Key) != string(w.Key) || string(m.Value) != string(w.Value) ||
			!m.Time.Equal(w.Time) || len(m.Headers) != 1 || m.Headers[0].Value[0] != byte(i) {
			t.Fatalf("message %d = offset %d %q=%q at %v headers %v, want %q=%q at %v", i, m.Offset, m.Key, m.Value, m.Time, m.Headers, w.Key, w.Value, w.Time)
		}
	}
}

func kafkaGoWriter(t *testing.T, ctx context.Context, sn *versionSniffer, dialer *kafka.Dialer, addr, topic string, acks kafka.RequiredAcks) {
	codecs := []kafka.Compression{0, kafka.Gzip, kafka.Snappy, kafka.Lz4, kafka.Zstd}
	const keys, perKey = 8, 5
	var start []int64
	for p := range 4 {
		c, err := dialer.DialLeader(ctx, "tcp", addr, topic, p)
		if err != nil {
			t.Fatalf("DialLeader %d: %v", p, err)
		}
		off, err := c.ReadLastOffset()
		c.Close()
		if err != nil {
			t.Fatalf("ReadLastOffset %d: %v", p, err)
		}
		start = append(start, off)
	}
	want := map[string]int{}
	for _, codec := range codecs {
		w := &kafka.Writer{
			Addr:         kafka.TCP(addr),
			Topic:        topic,
			Balancer:     &kafka.Hash{},
			RequiredAcks: acks,
			Compression:  codec,
			BatchTimeout: 5 * time.Millisecond,
			Transport:    &kafka.Transport{Dial: sn.dial},
		}
		var msgs []kafka.Message
		for k := range keys {
			for i := range perKey {
				v := fmt.Sprintf("%v-%d-%d", codec, k, i)
				msgs = append(msgs, kafka.Message{Key: []byte(fmt.Sprintf("key%d", k)), Value: []byte(v)})
				want[v] = k
			}
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatalf("Writer (codec %v): %v", codec, err)
		}
		if err := w.Close(); err != nil {
			t.Fatalf("Writer.Close: %v", err)
		}
	}

	keyPartition := map[int]int{}
	got := 0
	for p := range 4 {
		r := kafka.NewReader(kafka.ReaderConfig{
			Brokers:   []string{addr},
			Topic:     topic,
			Partition: p,
			MaxWait:   100 * time.Millisecond,
			Dialer:    dialer,
		})
		if err := r.SetOffset(start[p]); err != nil {
			t.Fatalf("SetOffset: %v", err)
		}
		lc, err := dialer.DialLeader(ctx, "tcp", addr, topic, p)
		if err != nil {
			t.Fatalf("DialLeader %d: %v", p, err)
		}
		end, err := lc.ReadLastOffset()
		lc.Close()
		if err != nil {
			t.Fatalf("ReadLastOffset %d: %v", p, err)
		}
		for off := start[p]; off < end; off++ {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				t.Fatalf("Reader partition %d at %d: %v", p, off, err)
			}
			if m.Offset != off {
				t.Fatalf("Reader partition %d: offset %d, want %d", p, m.Offset, off)
			}
			k, ok := want[string(m.Value)]
			if !ok {
				t.Fatalf("unexpected value %q", m.Value)
			}
			if string(m.Key) != fmt.Sprintf("key%d", k) {
				t.Fatalf("value %q under key %q", m.Value, m.Key)
			}
			if prev, seen := keyPartition[k]; seen && prev != p {
				t.Fatalf("key%d in partitions %d and %d despite the Hash balancer", k, prev, p)
			}
			keyPartition[k] = p
			delete(want, string(m.Value))
			got++
		}
		if err := r.Close(); err != nil && !errors.Is(err, io.EOF) {
			t.Fatalf("Reader.Close: %v", err)
		}
	}
	if len(want) != 0 {
		t.Fatalf("read %d messages, %d missing", got, len(want))
	}
}
