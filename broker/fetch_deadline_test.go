package broker

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/store"
)

// tracedStorage records which partitions a fetch reads batches of and
// looks up the bounds of. Each batch read moves the broker's clock an
// hour on, so a fetch past its deadline is made by the test, not waited for.
type tracedStorage struct {
	Storage
	mu     sync.Mutex
	clock  time.Time
	reads  []int32
	bounds int
}

func (s *tracedStorage) now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clock
}

// Partition counts a bounds lookup (a fetch takes one handle per
// partition and asks it its bounds) and traces the handle's reads.
func (s *tracedStorage) Partition(topic string, partition int32) PartitionReader {
	s.mu.Lock()
	s.bounds++
	s.mu.Unlock()
	return tracedPartition{PartitionReader: s.Storage.Partition(topic, partition), s: s, partition: partition}
}

// tracedPartition is a tracedStorage's read handle.
type tracedPartition struct {
	PartitionReader
	s         *tracedStorage
	partition int32
}

func (h tracedPartition) ViewBatch(offset int64) (store.BatchView, error) {
	h.s.mu.Lock()
	h.s.reads = append(h.s.reads, h.partition)
	h.s.clock = h.s.clock.Add(time.Hour)
	h.s.mu.Unlock()
	return h.PartitionReader.ViewBatch(offset)
}

// take returns the partitions read and bounds looked up since the last take.
func (s *tracedStorage) take() ([]int32, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	reads, bounds := s.reads, s.bounds
	s.reads, s.bounds = nil, 0
	return reads, bounds
}

// tracedBroker is a broker over a tracedStorage holding topic "d" of four
// partitions, one record in each.
func tracedBroker(t *testing.T) (*Broker, *tracedStorage) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	cl := newClient(t, b.Addr())
	createTopic(t, cl, "d", 4)
	for p := range int32(4) {
		produceSync(t, cl, "d", p, "v")
	}
	// The client's requests go over a socket after these stores, which
	// orders them before the broker's reads.
	ts := &tracedStorage{Storage: b.st, clock: time.Unix(0, 0)}
	b.st = ts
	b.now = ts.now
	return b, ts
}

// TestFetchAnswersAtItsDeadline is the wide catch-up fetch: a fetch from
// offset 0 of 50,000 partitions read every partition's batches before it
// answered, seconds past its max wait on a loaded machine. Once its max
// wait has passed, a fetch that holds records answers with them; a session
// goes on from the first partition it did not read.
func TestFetchAnswersAtItsDeadline(t *testing.T) {
	b, ts := tracedBroker(t)
	rc := dialRaw(t, b.Addr())
	steps := []struct {
		name      string
		req       *kmsg.FetchRequest
		wantReads []int32
		want      []string
	}{
		{name: "full fetch, no session", req: fetchReq("d", 0, 500*time.Millisecond, 0, 1, 2, 3),
			wantReads: []int32{0}, want: []string{"0:1", "1:0", "2:0", "3:0"}},
		{name: "session opens", req: sessionReq(0, 0, map[int32]int64{0: 0, 1: 0, 2: 0, 3: 0}),
			wantReads: []int32{0}, want: []string{"0:1", "1:0", "2:0", "3:0"}},
		{name: "session goes on where it stopped", req: sessionReq(-2, 1, map[int32]int64{0: 1}),
			wantReads: []int32{1}, want: []string{"1:1"}},
		{name: "and on", req: sessionReq(-2, 2, map[int32]int64{1: 1}),
			wantReads: []int32{2}, want: []string{"2:1"}},
	}
	var id int32
	for _, st := range steps {
		if st.req.SessionID == -2 {
			st.req.SessionID = id
		}
		r, ok := rc.roundTrip(st.req)
		if !ok {
			t.Fatalf("%s: connection closed", st.name)
		}
		resp := r.(*kmsg.FetchResponse)
		if resp.SessionID != 0 {
			id = resp.SessionID
		}
		reads, _ := ts.take()
		if !slices.Equal(reads, st.wantReads) {
			t.Errorf("%s: read batches of partitions %v, want %v", st.name, reads, st.wantReads)
		}
		if got := answered(t, resp); !slices.Equal(got, st.want) {
			t.Errorf("%s: answered %v, want %v", st.name, got, st.want)
		}
	}
}

// sessionReq is sessionFetch for topic "d" with a 500 ms long poll.
func sessionReq(id, epoch int32, offsets map[int32]int64) *kmsg.FetchRequest {
	req := sessionFetch(id, epoch, offsets)
	req.Topics[0].Topic = "d"
	req.MaxWaitMillis = 500
	return req
}

// TestFetchTimeoutAnswersItsRead is the idle long poll over many
// partitions: when its max wait ends with nothing new, it answers what its
// last read found instead of reading every partition again.
func TestFetchTimeoutAnswersItsRead(t *testing.T) {
	b, ts := tracedBroker(t)
	rc := dialRaw(t, b.Addr())
	r, ok := rc.roundTrip(fetchReq("d", 1, time.Millisecond, 0, 1, 2, 3))
	if !ok {
		t.Fatal("connection closed")
	}
	_, bounds := ts.take()
	if got := answered(t, r.(*kmsg.FetchResponse)); !slices.Equal(got, []string{"0:0", "1:0", "2:0", "3:0"}) {
		t.Errorf("answered %v", got)
	}
	if bounds != 4 {
		t.Errorf("looked up the bounds of %d partitions, want the 4 read once", bounds)
	}
}
