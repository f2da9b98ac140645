package broker

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/internal/fileops"
)

// heldFetch is a Fetch handled on a connection over loopback TCP whose
// response, views of the log, is not written yet.
type heldFetch struct {
	c      *conn
	out    []byte
	client *rawConn
}

func holdFetch(t *testing.T, b *Broker, req *kmsg.FetchRequest) *heldFetch {
	t.Helper()
	server, client := tcpPair(t)
	client.SetDeadline(time.Now().Add(30 * time.Second))
	c := benchConn(b)
	c.nc = server
	frame := benchFrame(req)
	if !b.inflight.take(int64(len(frame))) {
		t.Fatal("in-flight budget spent")
	}
	out, err := c.handle(frame)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.vec) == 0 {
		t.Fatal("the response is not written as a vector")
	}
	return &heldFetch{c: c, out: out, client: &rawConn{t: t, nc: client, corr: 1}}
}

// write sends the held response and returns the records the client reads.
func (h *heldFetch) write(t *testing.T) []byte {
	t.Helper()
	rp := h.response(t).Topics[0].Partitions[0]
	if rp.ErrorCode != 0 {
		t.Fatalf("fetch error %d", rp.ErrorCode)
	}
	return rp.RecordBatches
}

// response sends the held response and returns it as the client reads it.
func (h *heldFetch) response(t *testing.T) *kmsg.FetchResponse {
	t.Helper()
	if _, err := h.c.write(h.out); err != nil {
		t.Fatal(err)
	}
	h.c.releaseResponse()
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 11
	if !h.client.readResponse(resp) {
		t.Fatal("connection closed instead of a response")
	}
	return resp
}

// storedBatches is what partition 0's batches in [from, to) read as,
// copied.
func storedBatches(t *testing.T, b *Broker, topic string, from, to int64) []byte {
	t.Helper()
	return storedPartition(t, b, topic, 0, from, to)
}

// storedPartition is what the partition's batches in [from, to) read as,
// copied.
func storedPartition(t *testing.T, b *Broker, topic string, partition int32, from, to int64) []byte {
	t.Helper()
	var out []byte
	h := b.st.Partition(topic, partition)
	for off := from; off < to; {
		var err error
		out, _, off, err = h.ReadBatch(off, out)
		if err != nil {
			t.Fatalf("read %s/0 offset %d: %v", topic, off, err)
		}
	}
	return out
}

func logFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(path, "commitlog") && !strings.HasSuffix(path, ".tmp") && len(d.Name()) == 20 {
			out = append(out, path)
		}
		return nil
	})
	return out
}

// TestFetchWriteOutlivesRetention: a response spanning two log files is
// written after retention deleted both; the views it holds keep the
// mappings, so the client reads the batches as stored.
func TestFetchWriteOutlivesRetention(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	so := testStore()
	so.CommitLog.FileSize = 64 << 10
	so.CommitLog.RetentionBytes = 2 * so.CommitLog.FileSize
	so.CommitLog.RetentionCheckInterval = time.Millisecond
	b := startBrokerWith(t, cfg, so)
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "r", 1)
	value := strings.Repeat("v", 1000)
	produce := func(batches int) {
		for range batches {
			if rp := rawProduce(t, cl, "r", 0, rawBatch(-1, -1, -1, value, value, value, value, value, value, value, value, value, value)); rp.ErrorCode != 0 {
				t.Fatalf("produce: error %d", rp.ErrorCode)
			}
		}
	}
	produce(10) // about 100 KiB: the first two files
	want := storedBatches(t, b, "r", 0, 100)
	first := logFiles(t, cfg.DataDir)
	if len(first) < 2 {
		t.Fatalf("the batches fill %d log files, want them to span two", len(first))
	}
	held := holdFetch(t, b, fetchReq("r", 0, 0, 0))

	produce(60)
	for gone := false; !gone; {
		gone = true
		for _, f := range first[:2] {
			if _, err := os.Stat(f); err == nil {
				gone = false
			}
		}
		if err := testCtx(t).Err(); err != nil {
			t.Fatalf("retention never deleted %v: %v", first[:2], err)
		}
		time.Sleep(time.Millisecond)
	}
	if got := held.write(t); !bytes.Equal(got, want) {
		t.Fatalf("fetched %d bytes differing from the %d stored", len(got), len(want))
	}
}

// TestFetchWriteAcrossTruncate: a truncate of the tail above what a
// response holds (a deposed leader cutting what was never replicated)
// zeroes bytes in the same file; the response still carries its batch.
func TestFetchWriteAcrossTruncate(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "t", 1)
	for _, v := range []string{"kept", "cut"} {
		if rp := rawProduce(t, cl, "t", 0, rawBatch(-1, -1, -1, v)); rp.ErrorCode != 0 {
			t.Fatalf("produce: error %d", rp.ErrorCode)
		}
	}
	want := storedBatches(t, b, "t", 0, 1)
	req := fetchReq("t", 0, 0, 0)
	req.Topics[0].Partitions[0].PartitionMaxBytes = 1 // the first batch alone
	held := holdFetch(t, b, req)
	end, ok := b.st.Partition("t", 0).RecordEnd(0)
	if !ok {
		t.Fatal("no record at offset 0")
	}
	if err := storeOf(b).Truncate(end); err != nil {
		t.Fatal(err)
	}
	if _, hi := b.st.Bounds("t", 0); hi != 1 {
		t.Fatalf("after the truncate the partition ends at %d, want 1", hi)
	}
	if got := held.write(t); !bytes.Equal(got, want) {
		t.Fatalf("fetched %x, want %x", got, want)
	}
}

// TestFetchFaultFailsCleanly: a log file cut under the broker (something
// outside it truncating the file) makes its mapping fault. A response
// holding views of it fails with an error that closes the connection,
// whether written as a vector (the kernel's EFAULT), by sendfile (the
// file ends early) or copied (the copy's fault caught by Guard), and the
// broker lives.
func TestFetchFaultFailsCleanly(t *testing.T) {
	for _, tc := range []struct {
		name     string
		vectored bool
		size     int
		want     error
	}{
		{"vectored", true, 10000, syscall.EFAULT},
		{"sendfile", true, sendfileMin + 1000, io.ErrUnexpectedEOF},
		{"copied", false, 10000, fileops.ErrFault},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, t.TempDir())
			b := startBroker(t, cfg)
			cl := newClient(t, b.Addr())
			createTopic(t, cl, "f", 1)
			if rp := rawProduce(t, cl, "f", 0, rawBatch(-1, -1, -1, strings.Repeat("x", tc.size))); rp.ErrorCode != 0 {
				t.Fatalf("produce: error %d", rp.ErrorCode)
			}
			files := logFiles(t, cfg.DataDir)
			st, err := os.Stat(files[0])
			if err != nil {
				t.Fatal(err)
			}
			// The file gets its size back before the broker closes, whose
			// flush would find it cut.
			cut := func() {
				if err := os.Truncate(files[0], 0); err != nil {
					t.Fatal(err)
				}
			}
			defer os.Truncate(files[0], st.Size())
			server, client := tcpPair(t)
			go io.Copy(io.Discard, client)
			c := benchConn(b)
			c.nc = server
			if !tc.vectored {
				c.nc = tlsLike{server}
			}
			defer c.releaseResponse()
			if tc.vectored {
				frame := benchFrame(fetchReq("f", 0, 0, 0))
				if !b.inflight.take(int64(len(frame))) {
					t.Fatal("in-flight budget spent")
				}
				out, err := c.handle(frame)
				if err != nil {
					t.Fatal(err)
				}
				if got := c.fetch.sendfiles(); got != (tc.size >= sendfileMin) {
					t.Fatalf("a batch of %d bytes: sendfile %v", tc.size, got)
				}
				cut()
				if _, err := c.write(out); !errors.Is(err, tc.want) {
					t.Fatalf("write from a cut file: %v, want %v", err, tc.want)
				}
				return
			}
			// The copy is made as the response is encoded, right after the
			// handler: cut in between.
			api, _ := lookupAPI(int16(kmsg.Fetch))
			resp, err := c.serveAuthorized(api, fetchReq("f", 0, 0, 0))
			if err != nil {
				t.Fatal(err)
			}
			cut()
			if _, err := c.encodeFetch(1, resp.(*kmsg.FetchResponse)); !errors.Is(err, tc.want) {
				t.Fatalf("copy from a cut file: %v, want %v", err, tc.want)
			}
		})
	}
}

// tlsLike is a connection that is not a *net.TCPConn, as a tls.Conn is:
// the response's records are copied into it.
type tlsLike struct{ net.Conn }
