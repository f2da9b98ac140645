package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkTransaction is one produce request with a one-record batch for
// every partition of a topic, idempotent or in a transaction
// (AddPartitionsToTxn of every partition, the produce, EndTxn committing:
// one append of the decision and a marker per partition), over a
// loopback connection, so the difference is what a transaction costs.
//
//	go test -run '^$' -bench Transaction -benchtime 20x ./broker/
func BenchmarkTransaction(b *testing.B) {
	for _, partitions := range []int32{1, 10000} {
		for _, transactional := range []bool{false, true} {
			b.Run(fmt.Sprintf("partitions=%d/transactional=%v", partitions, transactional), func(b *testing.B) {
				benchTransactions(b, partitions, transactional)
			})
		}
	}
}

func benchTransactions(b *testing.B, partitions int32, transactional bool) {
	so := testStore()
	so.CommitLog.FileSize = 256 << 20
	br := startBrokerWith(b, testConfig(b, b.TempDir()), so)
	createTopic(b, newClient(b, br.Addr()), "bench", partitions)
	c := dialRaw(b, br.Addr())
	call := func(req kmsg.Request) kmsg.Response {
		c.nc.SetDeadline(time.Now().Add(time.Minute))
		resp, ok := c.roundTrip(req)
		if !ok {
			b.Fatalf("%T: connection closed", req)
		}
		return resp
	}
	id := "bench"
	init := kmsg.NewPtrInitProducerIDRequest()
	init.Version, init.TransactionTimeoutMillis = 4, 60000
	if transactional {
		init.TransactionalID = &id
	}
	ir := call(init).(*kmsg.InitProducerIDResponse)
	if ir.ErrorCode != 0 {
		b.Fatal(kerr.ErrorForCode(ir.ErrorCode))
	}
	all := make([]int32, partitions)
	for p := range all {
		all[p] = int32(p)
	}
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.Version, add.TransactionalID, add.ProducerID, add.ProducerEpoch = 3, id, ir.ProducerID, ir.ProducerEpoch
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "bench", Partitions: all}}
	end := kmsg.NewPtrEndTxnRequest()
	end.Version, end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = 3, id, ir.ProducerID, ir.ProducerEpoch, true
	batch := rawBatch
	if transactional {
		batch = txnBatch
	}
	b.ResetTimer()
	for i := range b.N {
		if transactional {
			if code := call(add).(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
				b.Fatal(kerr.ErrorForCode(code))
			}
		}
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = 9, -1, 60000
		if transactional {
			req.TransactionID = &id
		}
		rt := kmsg.ProduceRequestTopic{Topic: "bench"}
		for _, p := range all {
			rt.Partitions = append(rt.Partitions, kmsg.ProduceRequestTopicPartition{Partition: p, Records: batch(ir.ProducerID, ir.ProducerEpoch, int32(i), "v")})
		}
		req.Topics = []kmsg.ProduceRequestTopic{rt}
		if code := call(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
			b.Fatal(kerr.ErrorForCode(code))
		}
		if transactional {
			if code := call(end).(*kmsg.EndTxnResponse).ErrorCode; code != 0 {
				b.Fatal(kerr.ErrorForCode(code))
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(partitions), "ns/partition")
}
