package broker

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/internal/framed"
	"github.com/unilog/unilog/store"
)

func testLogger(t testing.TB) logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	if testing.Verbose() {
		l.SetOutput(testWriter{t})
	}
	return l
}

// failureLogger logs everything down to debug into the test's log, which
// go test prints only for a failed test: for a test that fails rarely, what
// the broker saw is in the failure's own output.
func failureLogger(t testing.TB) logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(testWriter{t})
	l.SetLevel(logrus.DebugLevel)
	return l
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// testConfig is a small broker on a free loopback port over dir.
func testConfig(t testing.TB, dir string) Config {
	return Config{
		DataDir:  dir,
		Listen:   "127.0.0.1:0",
		Admin:    "127.0.0.1:0",
		Logger:   testLogger(t),
		Security: &Security{},
	}
}

// testStore is the store of a test broker: small commit-log files.
func testStore() store.Options {
	return store.Options{CommitLog: commitlog.Options{FileSize: 8 << 20}}
}

// startBroker starts a broker over a testStore and closes it when the
// test ends.
func startBroker(t testing.TB, cfg Config) *Broker {
	t.Helper()
	return startBrokerWith(t, cfg, testStore())
}

// storeOf is the store a test broker serves.
func storeOf(b *Broker) *store.Store { return b.st.(*store.Store) }

// startBrokerWith starts a broker over a store opened with opts and
// closes it when the test ends.
func startBrokerWith(t testing.TB, cfg Config, opts store.Options) *Broker {
	t.Helper()
	b, err := Open(cfg, opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return b
}

func newClient(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.MetadataMinAge(50 * time.Millisecond), kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func createTopic(t testing.TB, cl *kgo.Client, topic string, partitions int32) {
	t.Helper()
	resp, err := kadm.NewClient(cl).CreateTopic(testCtx(t), partitions, 1, nil, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create topic %s: %v %v", topic, err, resp.Err)
	}
}

// verifyDir closes nothing; it checks a stopped broker's data directory.
func verifyDir(t testing.TB, dir string) {
	t.Helper()
	if err := store.Verify(dir); err != nil {
		t.Fatalf("verify %s: %v", dir, err)
	}
}

// consumeN reads n records from the given partitions from the start.
func consumeN(t testing.TB, addr, topic string, n int, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	cl := newClient(t, addr, append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200 * time.Millisecond)}, opts...)...)
	ctx := testCtx(t)
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", len(out), n, err)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Fatalf("fetch %s/%d: %v", topic, p, err)
		})
		out = append(out, fs.Records()...)
	}
	if len(out) != n {
		t.Fatalf("consumed %d records, want %d", len(out), n)
	}
	return out
}

// rawBatch builds a v2 record batch the way a producer does (kmsg encodes,
// the test only fills in the fields), with a correct CRC.
func rawBatch(producerID int64, epoch int16, firstSeq int32, values ...string) []byte {
	now := time.Now().UnixMilli()
	var recs []byte
	for i, v := range values {
		r := kmsg.NewRecord()
		r.OffsetDelta = int32(i)
		r.Value = []byte(v)
		body := r.AppendTo(nil)
		// Record.AppendTo writes the record without its length prefix
		// only when Length is set; Kafka records are varint-length-prefixed.
		r.Length = int32(len(body) - kbin.VarintLen(r.Length))
		recs = r.AppendTo(recs)
	}
	rb := kmsg.NewRecordBatch()
	rb.Magic = 2
	rb.LastOffsetDelta = int32(len(values) - 1)
	rb.FirstTimestamp = now
	rb.MaxTimestamp = now
	rb.ProducerID = producerID
	rb.ProducerEpoch = epoch
	rb.FirstSequence = firstSeq
	rb.NumRecords = int32(len(values))
	rb.Records = recs
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], framed.Checksum(b[21:]))
	return b
}

// rawConn is a plain TCP connection speaking kmsg, for requests a client
// library would never send.
type rawConn struct {
	t    testing.TB
	nc   net.Conn
	corr int32
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	return &rawConn{t: t, nc: nc}
}

// frame encodes a request with a v1/v2 request header.
func (c *rawConn) frame(req kmsg.Request) []byte {
	c.corr++
	buf := []byte{0, 0, 0, 0}
	buf = binary.BigEndian.AppendUint16(buf, uint16(req.Key()))
	buf = binary.BigEndian.AppendUint16(buf, uint16(req.GetVersion()))
	buf = binary.BigEndian.AppendUint32(buf, uint32(c.corr))
	buf = binary.BigEndian.AppendUint16(buf, 4)
	buf = append(buf, "test"...)
	if req.IsFlexible() {
		buf = append(buf, 0)
	}
	buf = req.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return buf
}

func (c *rawConn) write(b []byte) error {
	_, err := c.nc.Write(b)
	return err
}

// readResponse reads one response frame into resp (set to the request's
// version) and returns false if the connection was closed instead.
func (c *rawConn) readResponse(resp kmsg.Response) bool {
	c.t.Helper()
	var size [4]byte
	if _, err := io.ReadFull(c.nc, size[:]); err != nil {
		return false
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c.nc, body); err != nil {
		c.t.Fatalf("read response body: %v", err)
	}
	if corr := int32(binary.BigEndian.Uint32(body)); corr != c.corr {
		c.t.Fatalf("correlation id %d, want %d", corr, c.corr)
	}
	body = body[4:]
	if resp.IsFlexible() && resp.Key() != int16(kmsg.ApiVersions) {
		r := kbin.Reader{Src: body}
		kmsg.SkipTags(&r)
		body = r.Src
	}
	if err := resp.ReadFrom(body); err != nil {
		c.t.Fatalf("decode %T: %v", resp, err)
	}
	return true
}

// roundTrip sends req and decodes its response; false if the broker closed
// the connection instead of answering.
func (c *rawConn) roundTrip(req kmsg.Request) (kmsg.Response, bool) {
	c.t.Helper()
	if err := c.write(c.frame(req)); err != nil {
		return nil, false
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	return resp, c.readResponse(resp)
}

// expectClosed asserts the broker closes the connection.
func (c *rawConn) expectClosed() {
	c.t.Helper()
	var b [1]byte
	if _, err := c.nc.Read(b[:]); err == nil {
		c.t.Fatalf("connection still open, read a byte")
	}
}
