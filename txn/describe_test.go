package txn

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/internal/clock/clocktest"
)

// blockedRemote takes no markers until released, as another group's
// leader does while it fails over or its partition moves.
type blockedRemote struct {
	entered, release chan struct{}
}

func (b *blockedRemote) WriteMarkers(ctx context.Context, _ Markers) error {
	select {
	case b.entered <- struct{}{}:
	default:
	}
	select {
	case <-b.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestDescribeWhileMarkersWait: DescribeTransactions and ListTransactions
// answer at once with PrepareCommit while the transaction's EndTxn waits
// for another group's leader to take its markers, as Kafka's do; they do
// not queue behind it (they did, for as long as the markers took).
func TestDescribeWhileMarkersWait(t *testing.T) {
	out := new(strings.Builder)
	logger := logrus.New()
	logger.SetOutput(io.Discard)
	remote := &blockedRemote{entered: make(chan struct{}, 1), release: make(chan struct{})}
	c, err := Open(Options{Log: &memLog{parts: make(map[int32][]Record), out: out}, Groups: memGroups{out}, IDs: &memIDs{next: 1000},
		Remote: remote, Partitions: 3, Clock: clocktest.New(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	id := "slow"
	init := kmsg.NewPtrInitProducerIDRequest()
	init.Version, init.TransactionalID, init.TransactionTimeoutMillis = 4, &id, 60000
	init.ProducerID, init.ProducerEpoch = -1, -1
	ir := c.InitProducerID(ctx, init)
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.Version, add.TransactionalID, add.ProducerID, add.ProducerEpoch = 3, id, ir.ProducerID, ir.ProducerEpoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = "r", []int32{0}
	add.Topics = append(add.Topics, rt)
	c.AddPartitionsToTxn(ctx, add, func(string, int32) bool { return true })
	ended := make(chan int16, 1)
	go func() {
		end := kmsg.NewPtrEndTxnRequest()
		end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = id, ir.ProducerID, ir.ProducerEpoch, true
		ended <- c.EndTxn(ctx, end).ErrorCode
	}()
	<-remote.entered

	answered := make(chan [2]string, 1)
	go func() {
		d := kmsg.NewPtrDescribeTransactionsRequest()
		d.TransactionalIDs = []string{id}
		l := kmsg.NewPtrListTransactionsRequest()
		l.DurationFilterMillis = -1
		ls := c.ListTransactions(l).TransactionStates
		listed := ""
		if len(ls) == 1 {
			listed = ls[0].TransactionState
		}
		answered <- [2]string{c.DescribeTransactions(d).TransactionStates[0].State, listed}
	}()
	select {
	case got := <-answered:
		if got != [2]string{"PrepareCommit", "PrepareCommit"} {
			t.Errorf("described %q and listed %q while the markers wait, want PrepareCommit", got[0], got[1])
		}
	case <-time.After(30 * time.Second): // a hang guard, not a timing
		t.Fatal("DescribeTransactions and ListTransactions wait for the markers")
	}
	close(remote.release)
	if code := <-ended; code != 0 {
		t.Fatalf("EndTxn answered %d", code)
	}
	d := kmsg.NewPtrDescribeTransactionsRequest()
	d.TransactionalIDs = []string{id}
	if s := c.DescribeTransactions(d).TransactionStates[0].State; s != "CompleteCommit" {
		t.Errorf("described %q after the markers, want CompleteCommit", s)
	}
}
