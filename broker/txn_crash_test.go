package broker

import (
	"context"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/unilog/unilog/internal/txntest"
)

// childCrashEnv makes a child broker (runChildBroker) kill itself with
// SIGKILL at a point of a transaction's end: "before-complete", after the
// decision and markers are durable and before the coordinator's Complete
// record; "before-decision", before the decision and markers are appended.
const childCrashEnv = "UNILOG_BROKER_CHILD_TXN_CRASH"

// childCrashHook wraps the child's storage to crash where childCrashEnv
// says; nil without it.
func childCrashHook() func(Storage) Storage {
	at := os.Getenv(childCrashEnv)
	if at == "" {
		return nil
	}
	return func(st Storage) Storage { return &txnCrashStorage{Storage: st, at: at} }
}

// txnCrashStorage recognizes a transaction's appends (txnLog.Append): a
// state record first, with the markers after it when it decides.
type txnCrashStorage struct {
	Storage
	at      string
	decided atomic.Bool
}

func (s *txnCrashStorage) Append(dst []Appended, batches []StorageBatch) ([]Appended, error) {
	if len(batches) > 0 && batches[0].Topic == txnStateTopic {
		markers := len(batches) > 1
		switch {
		case markers && s.at == "before-decision", !markers && s.at == "before-complete" && s.decided.Load():
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		case markers:
			defer s.decided.Store(true)
		}
	}
	return s.Storage.Append(dst, batches)
}

// TestTxnCrash kills a broker process (SIGKILL) in the middle of ending a
// transaction over three partitions and restarts on its directory: the
// transaction is wholly visible to read_committed or not at all. Killed
// after the decision and markers, before the coordinator's Complete
// record, a commit is all visible (the markers are in the log, and the
// coordinator finishes it: DescribeTransactions shows CompleteCommit) and
// an abort none of it; killed before the decision, the transaction is
// Ongoing after the restart, invisible, and its timeout aborts it.
func TestTxnCrash(t *testing.T) {
	for _, tc := range []struct {
		at        string
		commit    bool
		visible   bool
		wantState string
	}{
		{"before-complete", true, true, "CompleteCommit"},
		{"before-complete", false, false, "CompleteAbort"},
		{"before-decision", true, false, "CompleteAbort"},
	} {
		name := tc.at + "/abort"
		if tc.commit {
			name = tc.at + "/commit"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv(childCrashEnv, tc.at)
			child := startChildBroker(t, dir)
			admin := newClient(t, child.addr)
			createTopic(t, admin, "cx", 3)
			ctx := testCtx(t)
			pr := newClient(t, child.addr, kgo.TransactionalID("crash"), kgo.TransactionTimeout(5*time.Second),
				kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
			if err := pr.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			for i := range 9 {
				if err := pr.ProduceSync(ctx, &kgo.Record{Topic: "cx", Partition: int32(i % 3), Value: []byte{byte('a' + i)}}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			endCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
			if err := txntest.End(endCtx, pr, kgo.TransactionEndTry(tc.commit), "cx"); err == nil {
				t.Fatal("EndTxn answered by a broker that should have been killed")
			}
			cancel()
			pr.Close()
			admin.Close()
			child.stop(syscall.SIGKILL) // already dead: reaps it

			os.Unsetenv(childCrashEnv)
			b := startBroker(t, testConfig(t, dir))
			cl := newClient(t, b.Addr())
			adm := kadm.NewClient(cl)
			eventually(t, "the transaction ended by the coordinator", func() (bool, string) {
				d, err := adm.DescribeTransactions(ctx, "crash")
				if err != nil {
					return false, err.Error()
				}
				s := d["crash"].State
				return s == tc.wantState, s
			})
			// A record after the transaction, which read_committed
			// reaches only past it.
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "cx", Partition: 0, Value: []byte("after")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			want := 1
			if tc.visible {
				want += 9
			}
			seen := make(map[string]int)
			for _, r := range consumeN(t, b.Addr(), "cx", want, kgo.FetchIsolationLevel(kgo.ReadCommitted())) {
				seen[string(r.Value)]++
			}
			for v, n := range seen {
				if n != 1 {
					t.Errorf("record %q seen %d times", v, n)
				}
			}
			if seen["after"] != 1 || len(seen) != want {
				t.Errorf("read_committed after the crash saw %v, want %d records (the transaction visible: %v)", seen, want, tc.visible)
			}
		})
	}
}
