package broker

import (
	"fmt"
	"reflect"
	"sort"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// observe runs the same client steps against any Kafka and returns what the
// client saw, as text.
func observe(t *testing.T, addr string) []string {
	cl := newClient(t, addr)
	adm := kadm.NewClient(cl)
	ctx := testCtx(t)
	var seen []string
	note := func(format string, args ...any) { seen = append(seen, fmt.Sprintf(format, args...)) }

	created, err := adm.CreateTopic(ctx, 3, 1, nil, "cmp")
	note("create: err=%v topicErr=%v", err, created.Err)
	dup, err := adm.CreateTopic(ctx, 3, 1, nil, "cmp")
	note("create again: err=%v topicErr=%v", err, dup.Err)

	for i := 0; i < 9; i++ {
		r := &kgo.Record{Topic: "cmp", Partition: int32(i % 3), Key: []byte(fmt.Sprint("k", i)), Value: []byte(fmt.Sprint("v", i)),
			Headers: []kgo.RecordHeader{{Key: "n", Value: []byte(fmt.Sprint(i))}}}
		res := cl.ProduceSync(ctx, r)
		pr, err := res.First()
		note("produce %d: partition=%d offset=%d err=%v", i, pr.Partition, pr.Offset, err)
	}

	md, err := adm.Metadata(ctx, "cmp")
	note("metadata: err=%v", err)
	for _, td := range md.Topics.Sorted() {
		note("metadata topic %s: err=%v partitions=%d", td.Topic, td.Err, len(td.Partitions))
		for _, p := range td.Partitions.Sorted() {
			note("metadata %s/%d: err=%v replicas=%d isr=%d", td.Topic, p.Partition, p.Err, len(p.Replicas), len(p.ISR))
		}
	}
	missing, err := adm.Metadata(ctx, "missing")
	note("metadata missing: err=%v topicErr=%v", err, missing.Topics["missing"].Err)

	for _, l := range []func() (kadm.ListedOffsets, error){
		func() (kadm.ListedOffsets, error) { return adm.ListStartOffsets(ctx, "cmp") },
		func() (kadm.ListedOffsets, error) { return adm.ListEndOffsets(ctx, "cmp") },
	} {
		offs, err := l()
		note("list offsets: err=%v", err)
		var listed []string
		offs.Each(func(o kadm.ListedOffset) {
			listed = append(listed, fmt.Sprintf("listed %s/%d: offset=%d err=%v", o.Topic, o.Partition, o.Offset, o.Err))
		})
		sort.Strings(listed)
		seen = append(seen, listed...)
	}

	consumer := newClient(t, addr, kgo.ConsumeTopics("cmp"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var recs []string
	for len(recs) < 9 && ctx.Err() == nil {
		fs := consumer.PollFetches(ctx)
		fs.EachError(func(topic string, p int32, err error) { note("fetch error %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			recs = append(recs, fmt.Sprintf("fetched %d/%d key=%s value=%s headers=%v", r.Partition, r.Offset, r.Key, r.Value, r.Headers))
		})
	}
	sort.Strings(recs)
	seen = append(seen, recs...)

	del, err := adm.DeleteTopics(ctx, "cmp")
	note("delete: err=%v topicErr=%v", err, del["cmp"].Err)
	return seen
}

// TestCompareWithKfake runs the same steps against franz-go's kfake and
// against unilog and expects the client to observe the same things.
func TestCompareWithKfake(t *testing.T) {
	fake, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	want := observe(t, fake.ListenAddrs()[0])

	b := startBroker(t, testConfig(t, t.TempDir()))
	got := observe(t, b.Addr())
	if !reflect.DeepEqual(got, want) {
		for i := 0; i < max(len(got), len(want)); i++ {
			var g, w string
			if i < len(got) {
				g = got[i]
			}
			if i < len(want) {
				w = want[i]
			}
			if g != w {
				t.Errorf("step %d:\n  unilog: %s\n  kfake:  %s", i, g, w)
			}
		}
	}
}
