package broker

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestGroupCommitCrash commits offsets under FlushSync to a broker child
// process, kills it with SIGKILL while commits are in flight and restarts
// on its directory: every acknowledged commit is there, and each commit's
// three partitions agree (none is torn).
func TestGroupCommitCrash(t *testing.T) {
	dir := t.TempDir()
	child := startChildBroker(t, dir)
	addr := child.addr
	cl := newClient(t, addr)
	createTopic(t, cl, "cr", 3)
	adm := kadm.NewClient(cl)

	var acked atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := int64(1); ; i++ {
			offs := kadm.Offsets{}
			for p := int32(0); p < 3; p++ {
				offs.Add(kadm.Offset{Topic: "cr", Partition: p, At: i, LeaderEpoch: -1})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			resp, err := adm.CommitOffsets(ctx, "gcr", offs)
			cancel()
			if err != nil || resp.Error() != nil {
				return
			}
			acked.Store(i)
		}
	}()
	eventually(t, "50 acknowledged commits", func() (bool, string) { return acked.Load() >= 50, fmt.Sprint(acked.Load()) })
	child.stop(syscall.SIGKILL)
	cl.Close()
	<-done
	last := acked.Load()

	b := startBroker(t, groupConfig(t, dir))
	offs, err := kadm.NewClient(newClient(t, b.Addr())).FetchOffsets(testCtx(t), "gcr")
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 3; p++ {
		o, ok := offs.Lookup("cr", p)
		// The commit in flight at the kill may or may not have made it.
		if !ok || o.At < last || o.At > last+1 {
			t.Fatalf("partition %d committed %+v after the crash; last acknowledged %d", p, o, last)
		}
		if first, _ := offs.Lookup("cr", 0); o.At != first.At {
			t.Fatalf("torn commit: partition 0 at %d, partition %d at %d", first.At, p, o.At)
		}
	}
	o, _ := offs.Lookup("cr", 0)
	t.Logf("%d commits acknowledged before SIGKILL; recovered at %d", last, o.At)
}
