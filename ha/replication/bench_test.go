package replication

import (
	"bytes"
	"testing"

	"github.com/unilog/unilog/commitlog"
)

// BenchmarkReplicate measures a follower catching up over loopback: the
// leader's log of 1 KiB records spread over the partitions is streamed,
// CRC-checked and written by the follower (256 MiB files). The stream carries raw log
// bytes, so the partition count should not matter:
//
//	go test -run '^$' -bench Replicate -benchtime 3x ./ha/replication/
func BenchmarkReplicate(b *testing.B) {
	for _, partitions := range []int{1, 10000} {
		b.Run(map[int]string{1: "partitions=1", 10000: "partitions=10000"}[partitions], func(b *testing.B) {
			const records = 64 << 10
			body := bytes.Repeat([]byte{7}, 1024)
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				leader, follower := newNodeSized(b, 256<<20), newNodeSized(b, 256<<20)
				ld, addr := leader.lead(b, 1, LeaderConfig{})
				batch := make([]commitlog.Message, 256)
				for n := 0; n < records; n += len(batch) {
					for j := range batch {
						batch[j] = commitlog.Message{Topic: "t", Partition: int32((n + j) % partitions), Body: body}
					}
					if _, err := leader.log.AppendBatch(batch); err != nil {
						b.Fatal(err)
					}
				}
				end := leader.log.WriteOffset()
				b.SetBytes(end)
				b.StartTimer()
				follower.follow(b, addr, 1, false)
				for follower.log.WriteOffset() < end {
					<-follower.log.Appended()
				}
				b.StopTimer()
				ld.Close()
			}
		})
	}
}
