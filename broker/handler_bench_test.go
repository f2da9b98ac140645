package broker

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The handler benchmarks run a request frame through conn.handle as a
// connection does (decode, handler, encode, buffers back to their pools)
// without the network, so allocs/op is the hot path's own. Divide by
// records/op (reported) for allocations per record; the steady state goal
// is none per record.
//
//	go test -run '^$' -bench 'Handler$' -benchmem ./broker/

const benchBatchRecords = 100

// benchConn is a connection of b without a socket.
func benchConn(b *Broker) *conn {
	return &conn{b: b, ctx: context.Background()}
}

// benchFrame encodes req as a request frame body (no size prefix), as
// readFrame hands it to handle.
func benchFrame(req kmsg.Request) []byte {
	rc := rawConn{}
	return rc.frame(req)[4:]
}

// serveFrame handles one frame the way conn.serve does, on a copy so the
// frame can be served again.
func serveFrame(tb testing.TB, c *conn, frame, scratch []byte) {
	copy(scratch, frame)
	if !c.b.inflight.take(int64(len(scratch))) {
		tb.Fatal("in-flight budget spent")
	}
	if _, err := c.handle(scratch); err != nil {
		tb.Fatal(err)
	}
	c.releaseResponse()
}

// BenchmarkProduceHandler sends one request of partitions batches of
// records/partitions records each: one large batch, and the shape a
// client produces round-robin over thousands of partitions, one small
// batch per partition, where the per-batch cost is the whole cost. At
// 10,000 partitions the small queues' journal passes its budget
// (consumequeue.DefaultSmallBudget) after about 80 ops and every queue is
// promoted to files of its own in the background: -benchtime 50x measures
// the appends alone, a longer run includes the promotions.
func BenchmarkProduceHandler(b *testing.B) {
	for _, partitions := range []int32{1, 1000, 10_000} {
		b.Run(fmt.Sprintf("partitions=%d", partitions), func(b *testing.B) {
			cfg := testConfig(b, b.TempDir())
			so := testStore()
			so.CommitLog.FileSize = 256 << 20
			br := startBrokerWith(b, cfg, so)
			createTopic(b, newClient(b, br.Addr()), "bench", partitions)
			per := max(benchBatchRecords/int(partitions), 1)
			values := make([]string, per)
			for i := range values {
				values[i] = fmt.Sprintf("%0100d", i)
			}
			req := kmsg.NewPtrProduceRequest()
			req.SetVersion(9)
			req.Acks = 1
			req.TimeoutMillis = 30_000
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = "bench"
			var size int
			for p := range partitions {
				rp := kmsg.NewProduceRequestTopicPartition()
				rp.Partition = p
				rp.Records = rawBatch(-1, -1, -1, values...)
				size += len(rp.Records)
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
			frame := benchFrame(req)
			scratch := make([]byte, len(frame))
			c := benchConn(br)
			serveFrame(b, c, frame, scratch)
			b.ReportAllocs()
			b.SetBytes(int64(size))
			b.ResetTimer()
			for range b.N {
				serveFrame(b, c, frame, scratch)
			}
			b.ReportMetric(float64(per*int(partitions)), "records/op")
		})
	}
}

// BenchmarkFetchHandler reads every partition of a topic from offset 0:
// 10 batches of 100 records a partition, and the shape of a consumer of
// 10,000 partitions, one small batch each, where the per-partition cost
// is the whole cost.
func BenchmarkFetchHandler(b *testing.B) {
	for _, tc := range []struct{ partitions, batches, records int32 }{
		{1, 10, benchBatchRecords}, {100, 10, benchBatchRecords}, {10_000, 1, 1},
	} {
		b.Run(fmt.Sprintf("partitions=%d", tc.partitions), func(b *testing.B) {
			br, frame := fetchBench(b, tc.partitions, tc.batches, tc.records)
			scratch := make([]byte, len(frame))
			c := benchConn(br)
			serveFrame(b, c, frame, scratch)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				serveFrame(b, c, frame, scratch)
			}
			b.ReportMetric(float64(tc.partitions*tc.batches*tc.records), "records/op")
		})
	}
}

// BenchmarkFetchWrite is BenchmarkFetchHandler with the response written
// to a loopback TCP connection, as conn.serve writes it, that a goroutine
// reads and discards: the records' way from the log to the socket.
//
//	go test -run '^$' -bench 'FetchWrite' -benchmem ./broker/
func BenchmarkFetchWrite(b *testing.B) {
	for _, partitions := range []int32{1, 100} {
		b.Run(fmt.Sprintf("partitions=%d", partitions), func(b *testing.B) {
			br, frame := fetchBench(b, partitions, 10, benchBatchRecords)
			scratch := make([]byte, len(frame))
			server, client := tcpPair(b)
			go io.Copy(io.Discard, client)
			c := benchConn(br)
			c.nc = server
			var written int64
			serve := func() {
				copy(scratch, frame)
				if !br.inflight.take(int64(len(scratch))) {
					b.Fatal("in-flight budget spent")
				}
				out, err := c.handle(scratch)
				if err != nil {
					b.Fatal(err)
				}
				n, err := c.write(out)
				if err != nil {
					b.Fatal(err)
				}
				written = n
				c.releaseResponse()
			}
			serve()
			b.SetBytes(written)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				serve()
			}
			b.ReportMetric(float64(partitions*10*benchBatchRecords), "records/op")
		})
	}
}

// fetchBench starts a broker holding 10 batches of benchBatchRecords
// records in each of partitions partitions and returns it with the frame
// of a fetch of them all.
func fetchBench(b *testing.B, partitions, batches, records int32) (*Broker, []byte) {
	br := startBroker(b, testConfig(b, b.TempDir()))
	cl := newClient(b, br.Addr())
	createTopic(b, cl, "bench", partitions)
	values := make([]string, records)
	for i := range values {
		values[i] = fmt.Sprintf("%0100d", i)
	}
	for p := range partitions {
		for range batches {
			if rp := rawProduce(b, cl, "bench", p, rawBatch(-1, -1, -1, values...)); rp.ErrorCode != 0 {
				b.Fatalf("produce: error %d", rp.ErrorCode)
			}
		}
	}
	all := make([]int32, partitions)
	for p := range all {
		all[p] = int32(p)
	}
	return br, benchFrame(fetchReq("bench", 0, 0, all...))
}

// tcpPair is both ends of a loopback TCP connection.
func tcpPair(tb testing.TB) (server, client net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

// BenchmarkReadFrame reads request frames from a loopback TCP connection
// as a connection's reader does (reserving their bytes as they arrive),
// without handling them.
//
//	go test -run '^$' -bench 'ReadFrame$' -benchmem ./broker/
func BenchmarkReadFrame(b *testing.B) {
	for _, size := range []int{1 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("bytes=%d", size), func(b *testing.B) {
			br := startBroker(b, testConfig(b, b.TempDir()))
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			go func() {
				nc, err := ln.Accept()
				if err != nil {
					return
				}
				defer nc.Close()
				frame := binary.BigEndian.AppendUint32(nil, uint32(size))
				frame = append(frame, make([]byte, size)...)
				for i := 0; i < b.N; i++ {
					if _, err := nc.Write(frame); err != nil {
						return
					}
				}
			}()
			nc, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer nc.Close()
			c := newConn(br, nc)
			b.SetBytes(int64(size))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				f, err := c.readFrame()
				if err != nil {
					b.Fatal(err)
				}
				c.releaseFrame(f.B)
				br.frames.put(f)
			}
		})
	}
}

// BenchmarkTopicMetadata builds the Metadata answer for one topic of
// 100,000 partitions, which each producer of `make bench-million` asks
// for.
func BenchmarkTopicMetadata(b *testing.B) {
	br := &Broker{}
	t := TopicMeta{Name: "m0", Partitions: 100_000}
	b.ReportAllocs()
	for b.Loop() {
		if mt := br.topicMetadata(t); len(mt.Partitions) != int(t.Partitions) {
			b.Fatalf("%d partitions", len(mt.Partitions))
		}
	}
}
