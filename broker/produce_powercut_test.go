package broker

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/internal/fileops"
	"github.com/unilog/unilog/internal/fileops/fileopstest"
)

// TestGroupedProducePowerCut: under FlushSync a produce of more batches
// than one append group (maxAppendGroup), whose flush the broker starts
// once its last group is appended (commitlog.Log.HoldFlushes), is
// answered only when all of it is durable. The power is cut below the
// page cache at a durability call in the middle of the workload; a broker
// reopened on what the disk kept holds every batch of every request
// answered before the cut.
func TestGroupedProducePowerCut(t *testing.T) {
	const (
		topic      = "grouped"
		partitions = 2*maxAppendGroup + 88 // three groups a request
		requests   = 8
	)
	for _, step := range []int64{1, 3, 6} {
		t.Run(fmt.Sprintf("cut-at-%d", step), func(t *testing.T) {
			dir := t.TempDir()
			pc := &powerCut{Recorder: fileopstest.NewRecorder(fileops.OS{}, dir), at: step}
			opts := testStore()
			opts.CommitLog.FileSize = 1 << 20 // the recorder copies a whole file at each fdatasync
			opts.CommitLog.FlushMode = commitlog.FlushSync
			opts.FS = pc
			b, err := open(testConfig(t, dir), opts, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			createTopic(t, newClient(t, b.Addr()), topic, partitions)
			if err := pc.Syncfs(dir); err != nil {
				t.Fatal(err)
			}
			pc.arm()

			rc := dialRaw(t, b.Addr())
			var answered []int
			for n := range requests {
				req := kmsg.NewPtrProduceRequest()
				req.SetVersion(9)
				req.Acks = -1
				req.TimeoutMillis = 10_000
				rt := kmsg.NewProduceRequestTopic()
				rt.Topic = topic
				for p := range int32(partitions) {
					rp := kmsg.NewProduceRequestTopicPartition()
					rp.Partition = p
					rp.Records = rawBatch(-1, -1, -1, fmt.Sprintf("%d/%d", n, p))
					rt.Partitions = append(rt.Partitions, rp)
				}
				req.Topics = append(req.Topics, rt)
				resp, ok := rc.roundTrip(req)
				if !ok {
					t.Fatalf("request %d: connection closed", n)
				}
				for _, rp := range resp.(*kmsg.ProduceResponse).Topics[0].Partitions {
					if rp.ErrorCode != 0 {
						t.Fatalf("request %d partition %d: error %d", n, rp.Partition, rp.ErrorCode)
					}
				}
				if !pc.Frozen() {
					answered = append(answered, n)
				}
			}
			if !pc.Frozen() {
				t.Fatalf("no cut at durability call %d: %d calls in %d requests", step, pc.steps(), requests)
			}
			img := t.TempDir()
			if err := pc.Image(img, false, uint64(step)); err != nil {
				t.Fatal(err)
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}

			reopened := testStore()
			reopened.CommitLog.FlushMode = commitlog.FlushSync
			addr := startBrokerWith(t, testConfig(t, img), reopened).Addr()
			ends, err := kadm.NewClient(newClient(t, addr)).ListEndOffsets(testCtx(t), topic)
			if err != nil {
				t.Fatal(err)
			}
			total := 0
			ends.Each(func(o kadm.ListedOffset) { total += int(o.Offset) })
			stored := make(map[string]bool)
			for _, r := range consumeN(t, addr, topic, total) {
				stored[string(r.Value)] = true
			}
			for _, n := range answered {
				for p := range partitions {
					if v := fmt.Sprintf("%d/%d", n, p); !stored[v] {
						t.Fatalf("request %d, answered before the cut, lost partition %d's batch (%d records stored)", n, p, total)
					}
				}
			}
			t.Logf("cut at durability call %d: %d of %d requests answered before it, %d records stored", step, len(answered), requests, total)
		})
	}
}
