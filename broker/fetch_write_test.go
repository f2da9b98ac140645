package broker

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/store"
)

// handleDecoded serves req on c as conn.serve does and decodes the
// response as a client would, records included.
func handleDecoded(t testing.TB, c *conn, req kmsg.Request) kmsg.Response {
	t.Helper()
	frame := benchFrame(req)
	if !c.b.inflight.take(int64(len(frame))) {
		t.Fatal("in-flight budget spent")
	}
	out, err := c.handle(frame)
	if err != nil {
		t.Fatal(err)
	}
	defer c.releaseResponse()
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	body := out[8:]
	if resp.IsFlexible() {
		r := kbin.Reader{Src: body}
		kmsg.SkipTags(&r)
		body = r.Src
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("decode %T: %v", resp, err)
	}
	return resp
}

// TestFetchHeadEncoding holds the Fetch encoder to kmsg: for every version
// served, the response written inline, and the vector around the spliced
// batches, are the bytes kmsg encodes with the batches in RecordBatches.
func TestFetchHeadEncoding(t *testing.T) {
	batch := func(s string) store.BatchView { return store.BatchView{Bytes: []byte(s)} }
	recs := fetchRecords{views: []store.BatchView{batch("aaaa"), batch("bb"), batch(string(make([]byte, 300)))}}
	cases := []struct {
		name  string
		spans []span
		// records is what kmsg gets in RecordBatches, by partition.
		records [][]byte
		aborted []kmsg.FetchResponseTopicPartitionAbortedTransaction
	}{
		{"no partitions", nil, nil, nil},
		{"empty records", []span{{0, 0}}, [][]byte{{}}, nil},
		{"one batch", []span{{0, 1}}, [][]byte{[]byte("aaaa")}, nil},
		{"batches over partitions", []span{{0, 2}, {2, 2}, {2, 3}}, [][]byte{[]byte("aaaabb"), {}, make([]byte, 300)}, nil},
		{"partition after the spans", []span{{0, 1}}, [][]byte{[]byte("aaaa"), {}}, nil},
		{"aborted transactions", []span{{0, 1}, {1, 2}}, [][]byte{[]byte("aaaa"), []byte("bb")},
			[]kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: 7, FirstOffset: 3}, {ProducerID: 9, FirstOffset: 40}}},
		{"no aborted transactions", []span{{0, 1}}, [][]byte{[]byte("aaaa")}, []kmsg.FetchResponseTopicPartitionAbortedTransaction{}},
	}
	for _, tc := range cases {
		for v := int16(4); v <= 12; v++ {
			t.Run(fmt.Sprintf("%s/v%d", tc.name, v), func(t *testing.T) {
				resp := kmsg.NewPtrFetchResponse()
				resp.Version, resp.ThrottleMillis, resp.SessionID, resp.ErrorCode = v, 5, 77, 0
				for i, records := range tc.records {
					if i%2 == 0 {
						rt := kmsg.NewFetchResponseTopic()
						rt.Topic = fmt.Sprintf("topic-%d", i)
						resp.Topics = append(resp.Topics, rt)
					}
					rp := kmsg.NewFetchResponseTopicPartition()
					rp.Partition, rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = int32(i), 100, 90, 1
					rp.AbortedTransactions = tc.aborted
					rp.RecordBatches = records
					rt := &resp.Topics[len(resp.Topics)-1]
					rt.Partitions = append(rt.Partitions, rp)
				}
				want := resp.AppendTo(nil)
				for i := range resp.Topics {
					for j := range resp.Topics[i].Partitions {
						if p := &resp.Topics[i].Partitions[j]; len(p.RecordBatches) > 0 {
							p.RecordBatches = []byte{}
						}
					}
				}
				r := recs
				r.spans = tc.spans
				inline, err := r.appendHead(nil, resp, true)
				if err != nil || !bytes.Equal(inline, want) {
					t.Fatalf("inline: %v\n got %x\nwant %x", err, inline, want)
				}
				head, err := r.appendHead(nil, resp, false)
				if err != nil {
					t.Fatal(err)
				}
				if got := bytes.Join(r.vector(nil, head), nil); !bytes.Equal(got, want) {
					t.Fatalf("vectored:\n got %x\nwant %x", got, want)
				}
			})
		}
	}
}

// TestFetchHeadRefusesTags: a tagged field the encoder does not write is
// an error, never a response silently without it.
func TestFetchHeadRefusesTags(t *testing.T) {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 12
	rt := kmsg.NewFetchResponseTopic()
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.CurrentLeader.LeaderID = 3
	rt.Partitions = append(rt.Partitions, rp)
	resp.Topics = append(resp.Topics, rt)
	var r fetchRecords
	if _, err := r.appendHead(nil, resp, true); !errors.Is(err, errFetchTags) {
		t.Fatalf("got %v, want errFetchTags", err)
	}
}
