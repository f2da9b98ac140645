package bench

import (
	"encoding/binary"
	"math/rand/v2"
	"time"
)

// stampSize is the head of every end-to-end record value: the time the
// record was due to be sent, in unix nanoseconds, big endian. The consumer
// reads it back for produce-to-consume latency, and the produce latency is
// measured from it too, so that under --rate a broker that falls behind is
// charged for the wait it causes (no coordinated omission).
const stampSize = 8

// minValueSize is the smallest end-to-end record value: the stamp.
const minValueSize = stampSize

// valueTemplate returns size incompressible bytes, the same for every
// record, into which the stamp is written.
func valueTemplate(size int) []byte {
	v := make([]byte, size)
	rnd := rand.New(rand.NewPCG(3, 4))
	for i := range v {
		v[i] = byte(rnd.Uint32())
	}
	return v
}

func stamp(v []byte, due time.Time) { binary.BigEndian.PutUint64(v, uint64(due.UnixNano())) }

// stampOf returns the stamp of a value, false for a value too short to
// carry one (a record some other tool produced).
func stampOf(v []byte) (time.Time, bool) {
	if len(v) < stampSize {
		return time.Time{}, false
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(v))), true
}
