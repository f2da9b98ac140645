package broker

import (
	"container/list"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/auth"
)

// Incremental fetch sessions (KIP-227, Fetch v7+). A consumer of many
// partitions would otherwise list every partition in every Fetch and get
// every partition back, changed or not: at 50,000 partitions that is
// megabytes each way per round trip while a handful of partitions carry
// data. A session keeps the partition list and each partition's fetch
// offset on the broker; the client then sends only what changed (a new
// fetch offset, a partition added, ForgottenTopics for one dropped) and the
// broker answers only partitions with records, an error or a changed high
// watermark, log start or last stable offset.
//
// Request (SessionID, SessionEpoch):
//
//	0, -1   full fetch, no session (the pre-v7 behaviour)
//	0, 0    full fetch, opening a session; the answer carries its id
//	X, 0    closes X, then as 0, 0
//	X, -1   closes X, full fetch without a session
//	X, N>0  incremental fetch of session X, which expects epoch N
//
// An unknown X answers FETCH_SESSION_ID_NOT_FOUND and a wrong N
// INVALID_FETCH_SESSION_EPOCH; both make the client start over with a full
// fetch. A session belongs to the principal that opened it. The cache holds
// at most maxFetchSessions sessions and maxSessionPartitions partitions
// over all sessions, evicting the least recently used: an evicted client
// pays one full fetch, never data.

const (
	// maxFetchSessions is Kafka's max.incremental.fetch.session.cache.slots.
	maxFetchSessions = 1000
	// maxSessionPartitions bounds the memory of all sessions (about 100
	// bytes a partition).
	maxSessionPartitions = 2_000_000
)

// fetchSessions is the broker's session cache.
type fetchSessions struct {
	mu         sync.Mutex
	byID       map[int32]*list.Element // of *fetchSession
	lru        list.List               // front: most recently used
	partitions int
	maxCount   int
	maxParts   int
}

func newFetchSessions(maxCount, maxParts int) *fetchSessions {
	return &fetchSessions{byID: make(map[int32]*list.Element), maxCount: maxCount, maxParts: maxParts}
}

// fetchSession is one client's session. Its mutex is held for a whole
// Fetch, long poll included, so two requests never interleave their
// updates; the cache's lock is never held while waiting for it.
type fetchSession struct {
	mu        sync.Mutex
	id        int32
	principal string
	epoch     int32 // the epoch the next incremental request must carry
	parts     []*sessionPartition
	index     map[topicPartition]*sessionPartition
	// next is where the next fetch starts reading, so that partitions left
	// out of a response by max bytes are served first the next time.
	next int
	// size is the partition count charged to the cache.
	size int
}

// sessionPartition is a partition of a session: what the client asked
// (fetch offset, max bytes) and what it was last told.
type sessionPartition struct {
	topic       string
	topicID     [16]byte
	partition   int32
	fetchOffset int64
	maxBytes    int32
	// Last answered; -2 until the partition was first answered.
	highWatermark, logStart int64
}

func (sp *sessionPartition) fetch() fetchPartition {
	return fetchPartition{topic: sp.topic, topicID: sp.topicID, partition: sp.partition, fetchOffset: sp.fetchOffset, maxBytes: sp.maxBytes, session: sp}
}

// changed reports whether an incremental response must carry the
// partition.
func (sp *sessionPartition) changed(rp *kmsg.FetchResponseTopicPartition, records bool) bool {
	return rp.ErrorCode != 0 || records || rp.HighWatermark != sp.highWatermark || rp.LogStartOffset != sp.logStart
}

// fetchPartition is one partition a fetch reads; session is nil for a
// sessionless fetch.
type fetchPartition struct {
	topic       string
	topicID     [16]byte
	partition   int32
	fetchOffset int64
	maxBytes    int32
	session     *sessionPartition
	denied      bool // the principal may no longer consume the topic
}

// requestPartitions appends to out the partitions of a sessionless fetch,
// in request order.
func requestPartitions(out []fetchPartition, req *kmsg.FetchRequest) []fetchPartition {
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			out = append(out, fetchPartition{topic: t.Topic, topicID: t.TopicID, partition: p.Partition, fetchOffset: p.FetchOffset, maxBytes: p.PartitionMaxBytes})
		}
	}
	return out
}

// open resolves the session a request names. It returns the session, locked
// (nil for a sessionless fetch), whether the fetch is incremental, and an
// error for the response's top-level error code.
func (fs *fetchSessions) open(req *kmsg.FetchRequest, principal string) (s *fetchSession, incremental bool, err *kerr.Error) {
	if req.Version < 7 {
		return nil, false, nil
	}
	id, epoch := req.SessionID, req.SessionEpoch
	switch {
	case epoch == -1:
		if id != 0 {
			fs.remove(id)
		}
		return nil, false, nil
	case epoch == 0:
		if id != 0 {
			fs.remove(id)
		}
		s = fs.create(principal)
		s.mu.Lock()
		s.advance()
		s.update(req)
		fs.resize(s)
		return s, false, nil
	case epoch < 0:
		return nil, false, kerr.InvalidFetchSessionEpoch
	}
	s = fs.get(id, principal)
	if s == nil {
		return nil, false, kerr.FetchSessionIDNotFound
	}
	s.mu.Lock()
	if s.epoch != epoch {
		s.mu.Unlock()
		return nil, false, kerr.InvalidFetchSessionEpoch
	}
	s.advance()
	s.update(req)
	fs.resize(s)
	return s, true, nil
}

// create registers a new session, evicting least recently used ones while
// the cache is full.
func (fs *fetchSessions) create(principal string) *fetchSession {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for fs.lru.Len() >= fs.maxCount {
		fs.evictOldest()
	}
	s := &fetchSession{principal: principal, index: make(map[topicPartition]*sessionPartition)}
	for {
		s.id = rand.Int32N(math.MaxInt32) + 1
		if _, taken := fs.byID[s.id]; !taken {
			break
		}
	}
	fs.byID[s.id] = fs.lru.PushFront(s)
	return s
}

func (fs *fetchSessions) get(id int32, principal string) *fetchSession {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	e, ok := fs.byID[id]
	if !ok || e.Value.(*fetchSession).principal != principal {
		return nil
	}
	fs.lru.MoveToFront(e)
	return e.Value.(*fetchSession)
}

func (fs *fetchSessions) remove(id int32) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if e, ok := fs.byID[id]; ok {
		fs.drop(e)
	}
}

// resize charges the session's partition count to the cache and evicts
// other sessions while the cache holds too many partitions. s stays even
// alone over the limit: its client would otherwise loop on full fetches.
func (fs *fetchSessions) resize(s *fetchSession) {
	n := len(s.parts)
	fs.mu.Lock()
	defer fs.mu.Unlock()
	e, ok := fs.byID[s.id]
	if !ok {
		return // evicted meanwhile; the next request learns it
	}
	fs.partitions += n - s.size
	s.size = n
	for fs.partitions > fs.maxParts && fs.lru.Back() != e {
		fs.evictOldest()
	}
}

// evictOldest drops the least recently used session; fs.mu held.
func (fs *fetchSessions) evictOldest() {
	if e := fs.lru.Back(); e != nil {
		fs.drop(e)
	}
}

func (fs *fetchSessions) drop(e *list.Element) {
	s := e.Value.(*fetchSession)
	fs.lru.Remove(e)
	delete(fs.byID, s.id)
	fs.partitions -= s.size
}

// count is the number of sessions cached.
func (fs *fetchSessions) count() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.lru.Len()
}

// advance moves on to the epoch the next request must carry.
func (s *fetchSession) advance() {
	if s.epoch == math.MaxInt32 {
		s.epoch = 1 // KIP-227: the epoch wraps to 1, never to 0 or below
	} else {
		s.epoch++
	}
}

// partitionCount is the number of partitions of all cached sessions.
func (fs *fetchSessions) partitionCount() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.partitions
}

// update applies a request to the session: listed partitions are added or
// take the request's fetch offset and max bytes, forgotten ones leave.
func (s *fetchSession) update(req *kmsg.FetchRequest) {
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tp := topicPartition{t.Topic, p.Partition}
			sp, ok := s.index[tp]
			if !ok {
				sp = &sessionPartition{topic: t.Topic, topicID: t.TopicID, partition: p.Partition, highWatermark: -2, logStart: -2}
				s.index[tp] = sp
				s.parts = append(s.parts, sp)
			}
			sp.fetchOffset = p.FetchOffset
			sp.maxBytes = p.PartitionMaxBytes
		}
	}
	forgotten := 0
	for _, t := range req.ForgottenTopics {
		for _, p := range t.Partitions {
			tp := topicPartition{t.Topic, p}
			if sp, ok := s.index[tp]; ok {
				delete(s.index, tp)
				sp.topic = "" // marks it for the compaction below
				forgotten++
			}
		}
	}
	if forgotten > 0 {
		kept := s.parts[:0]
		for i, sp := range s.parts {
			if sp.topic != "" {
				kept = append(kept, sp)
			} else if i < s.next {
				s.next--
			}
		}
		clear(s.parts[len(kept):])
		s.parts = kept
	}
	if s.next >= len(s.parts) {
		s.next = 0
	}
}

// partitions lists the session's partitions for one fetch, starting where
// the last response ran out of bytes.
func (s *fetchSession) partitions(dst []fetchPartition) []fetchPartition {
	for i := range s.parts {
		dst = append(dst, s.parts[(s.next+i)%len(s.parts)].fetch())
	}
	return dst
}

// answered records what the response told the client; read is how many of the listed partitions the response reached
// before its byte budget ran out.
func (s *fetchSession) answered(parts []fetchPartition, resp []kmsg.FetchResponseTopicPartition, read int) {
	for i, p := range parts {
		p.session.highWatermark = resp[i].HighWatermark
		p.session.logStart = resp[i].LogStartOffset
	}
	if len(s.parts) > 0 {
		s.next = (s.next + read) % len(s.parts)
	}
}

// authorizeSession checks again the partitions an incremental fetch reads
// without naming them: they were authorized when they joined the session,
// and an ACL may have changed since. The request's own partitions were
// split by serveAuthorized like any request's.
func (c *conn) authorizeSession(parts []fetchPartition) []fetchPartition {
	p := c.principal()
	allowed := make(map[string]bool)
	for i := range parts {
		t := parts[i].topic
		ok, seen := allowed[t]
		if !seen {
			ok = c.b.authorizeTopic(p, auth.Consume, t)
			allowed[t] = ok
		}
		parts[i].denied = !ok
	}
	return parts
}
