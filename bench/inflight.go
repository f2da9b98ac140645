package bench

import (
	"sync"
	"sync/atomic"
	"time"
)

// The load's own cost per record. The clients share the machine's cores
// with the broker (at 10,000 partitions franz-go sends about one record per
// partition per batch and the clients take more CPU than the broker), so
// whatever the load spends per record is taken from the system measured.
// A record in flight is an inFlight taken from a pool and handed to the
// sender as an acker: no value buffer, closure or interface boxing is
// allocated per record, and a value buffer, which differs from the
// template only in its stamp, is written whole only when first made.

// acker is told how one sent record ended, exactly once.
type acker interface {
	ack(err error)
}

// produceRun is what every record of one produce run reports to.
type produceRun struct {
	acked, failed atomic.Int64
	firstErr      atomic.Value // string
	hist          syncLatency
	free          sync.Pool // *inFlight, value buffers holding the template
}

func newProduceRun(messageSize int) *produceRun {
	template := valueTemplate(messageSize)
	r := &produceRun{hist: syncLatency{l: newLatency(), flight: newLatency()}}
	r.free.New = func() any { return &inFlight{run: r, value: append([]byte(nil), template...)} }
	return r
}

// inFlight is one record between Send and its acknowledgement.
type inFlight struct {
	run    *produceRun
	value  []byte
	due    time.Time
	called time.Time // when Send was called: the record's in-flight time starts
}

// take returns a record in flight due at due, its value stamped.
func (r *produceRun) take(due time.Time) *inFlight {
	f := r.free.Get().(*inFlight)
	f.due = due
	stamp(f.value, due)
	return f
}

func (f *inFlight) ack(err error) {
	r := f.run
	r.hist.record(f.due, f.called)
	if err != nil {
		r.failed.Add(1)
		r.firstErr.CompareAndSwap(nil, err.Error())
	} else {
		r.acked.Add(1)
	}
	r.free.Put(f)
}
