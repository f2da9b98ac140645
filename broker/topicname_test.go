package broker

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestLongTopicNames: a topic whose consume-queue directory name
// (name@<topic id>) would pass the file system's 255 bytes is refused at
// creation with INVALID_TOPIC_EXCEPTION; the longest accepted name
// produces and reads back, and so does every other topic. Before, a
// 249-character topic was created, its first record stopped the
// dispatcher for every partition (the queue could not be opened, retried
// every second), and acks=-1 produces everywhere timed out.
func TestLongTopicNames(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	c := dialRaw(t, b.Addr())
	longest := strings.Repeat("l", maxTopicNameLen)
	for _, tt := range []struct {
		name string
		want int16
	}{
		{strings.Repeat("k", 249), kerr.InvalidTopicException.Code},
		{strings.Repeat("k", maxTopicNameLen+1), kerr.InvalidTopicException.Code},
		{longest, 0},
		{"short", 0},
	} {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = tt.name, 1, 1
		req.Version, req.Topics, req.TimeoutMillis = 4, append(req.Topics, rt), 10000
		resp := call(t, c, req).(*kmsg.CreateTopicsResponse).Topics[0]
		if resp.ErrorCode != tt.want {
			t.Fatalf("create a topic of %d characters: %v, want %v", len(tt.name), kerr.ErrorForCode(resp.ErrorCode), kerr.ErrorForCode(tt.want))
		}
		if tt.want != 0 && (resp.ErrorMessage == nil || !strings.Contains(*resp.ErrorMessage, "characters")) {
			t.Errorf("create a topic of %d characters: message %v, want the limit named", len(tt.name), resp.ErrorMessage)
		}
	}
	cl := newClient(t, b.Addr())
	for _, topic := range []string{longest, "short"} {
		if err := cl.ProduceSync(testCtx(t), &kgo.Record{Topic: topic, Value: []byte(topic[:5])}).FirstErr(); err != nil {
			t.Fatalf("produce to a topic of %d characters: %v", len(topic), err)
		}
	}
	for _, topic := range []string{longest, "short"} {
		rd := newClient(t, b.Addr(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
		fs := rd.PollFetches(testCtx(t))
		if err := fs.Err(); err != nil {
			t.Fatalf("read %d characters' topic: %v", len(topic), err)
		}
		if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != topic[:5] {
			t.Fatalf("read %d characters' topic: %d records", len(topic), len(recs))
		}
	}
}
