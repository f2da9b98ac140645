package broker

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/auth"
	"github.com/unilog/unilog/store"
)

// minFetchRead is the least time a fetch reads partitions before its
// deadline can stop it, so that a fetch without a long poll (max wait 0)
// still answers more than one partition.
const minFetchRead = 100 * time.Millisecond

// Fetch v4 is the first to return v2 batches: older fetchers would need
// down-conversion and are refused; v13 addresses topics by id only.
func init() {
	register(kmsg.Fetch, 4, 12, (*Broker).handleFetch, authorizeFetch)
}

// authorizeFetch: a topic the principal may not consume is answered
// TOPIC_AUTHORIZATION_FAILED.
func authorizeFetch(z authz, req kmsg.Request) (kmsg.Response, error) {
	r := req.(*kmsg.FetchRequest)
	if z.b.clusterAction(z.p) {
		return z.run() // a partition move's copier (interbroker.go)
	}
	allow := z.allow(auth.Consume)
	return authorizeEach(z, &r.Topics, func(t kmsg.FetchRequestTopic) bool {
		if allow(t.Topic) {
			return true
		}
		// An error answers at once, as Kafka does, instead of long-polling.
		r.MaxWaitMillis = 0
		return false
	}, func(fr *kmsg.FetchResponse, t kmsg.FetchRequestTopic) {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, tp := range t.Partitions {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = tp.Partition
			rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
			rp.RecordBatches = []byte{}
			rt.Partitions = append(rt.Partitions, rp)
		}
		fr.Topics = append(fr.Topics, rt)
	})
}

// handleFetch serves stored batches as stored: the consume queue locates
// the batch holding each requested offset, a view of its bytes in the
// mapped log is kept for the response (fetch_write.go splices them into
// it as it is written) and reading continues with the next batch.
// When fewer than min_bytes are available the request waits, up to
// max_wait_ms, on one dispatcher waiter registered on every partition it
// reads; the connection closing or a broker Close ends the wait early.
// Every return releases the waiter, so an idle consumer polling thousands
// of partitions holds nothing between its fetches.
//
// max_wait_ms also bounds the reading: a fetch over tens of thousands of
// partitions with records at each (a consumer catching up) took seconds to
// read them all, so once the max wait has passed a fetch that holds records
// stops reading and answers, as when max_bytes runs out. A session's next
// fetch starts at the first partition left unread; a client without a
// session reads the rest in its next fetch, as with max_bytes.
//
// Fetch v7+ may name an incremental fetch session (fetch_session.go): the
// partitions read are then the session's, and the response carries only
// those that changed.
func (b *Broker) handleFetch(ctx context.Context, c *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.FetchRequest)
	s, incremental, serr := b.fetchSessions.open(req, c.principal())
	if serr != nil {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = serr.Code
		return resp, nil
	}
	recs := c.fetched()
	sc := recs.takeScratch()
	var parts []fetchPartition
	if s != nil {
		defer s.mu.Unlock()
		parts = s.partitions(sc.parts[:0])
	} else {
		parts = requestPartitions(sc.parts[:0], req)
	}
	sc.parts = parts
	if b.cfg.Security.ACL != nil && incremental {
		parts = c.authorizeSession(parts)
	}
	if cap(sc.results) < len(parts) {
		sc.results = make([]kmsg.FetchResponseTopicPartition, len(parts))
	}

	f := fetchState{b: b, req: req, parts: parts, recs: recs, sc: sc, results: sc.results[:len(parts)],
		spans: sc.spans[:0], idle: sc.idle[:0],
		readBy: b.now().Add(max(time.Duration(req.MaxWaitMillis)*time.Millisecond, minFetchRead))}

	var w Waiter
	if req.MaxWaitMillis > 0 {
		w = b.st.NewWaiter()
		defer w.Release()
	}
	var timer *time.Timer
	for {
		// Taken before the read: a move of the high watermark after it
		// still wakes the wait.
		replicated := b.replicationChanged()
		total, failed, unreplicated := f.read()
		if failed || total >= int(req.MinBytes) || w == nil {
			break
		}
		f.watch(w)
		if !unreplicated {
			replicated = nil
		}
		if timer == nil {
			timer = time.NewTimer(time.Duration(req.MaxWaitMillis) * time.Millisecond)
			defer timer.Stop()
		}
		select {
		case <-w.C():
			// A partition grew: drop the other registrations, read again.
			w.Release()
			continue
		case <-replicated:
			w.Release()
			continue
		case <-timer.C:
		case <-b.closing:
		case <-ctx.Done():
		}
		// The last read stands unless a partition grew since: reading
		// every partition again would double an idle poll's cost.
		grew := false
		select {
		case <-w.C():
			grew = true
		case <-replicated:
			grew = true
		default:
		}
		w.Release()
		if grew {
			f.read()
		}
		break
	}
	b.metrics.fetchedBytes.Add(float64(f.total))
	f.countByTopic()
	resp := f.response(s, incremental)
	return resp, nil
}

// fetchState is one fetch's reads: results[i] answers parts[i], its
// records spans[i] of recs.views.
type fetchState struct {
	b       *Broker
	req     *kmsg.FetchRequest
	parts   []fetchPartition
	results []kmsg.FetchResponseTopicPartition
	spans   []span
	recs    *fetchRecords
	sc      *fetchScratch // the slices' arrays, kept for the next fetch
	readBy  time.Time     // past it, a fetch holding records reads no further
	total   int           // record bytes read
	reached int           // partitions read before the byte or time budget ran out
	// idle are the partitions a long poll watches, read to their high
	// watermark with nothing waiting for replication.
	idle []int
}

// countByTopic adds what the fetch serves to each topic's counter, once
// per topic: a request lists a topic's partitions together.
func (f *fetchState) countByTopic() {
	if f.total == 0 {
		return
	}
	var topic string
	n := 0
	for i, p := range f.parts {
		if i > 0 && p.topic != topic && n > 0 {
			f.b.metrics.topicFetched.WithLabelValues(topic).Add(float64(n))
			n = 0
		}
		topic = p.topic
		for _, v := range f.recs.views[f.spans[i].from:f.spans[i].to] {
			n += len(v.Bytes)
		}
	}
	if n > 0 {
		f.b.metrics.topicFetched.WithLabelValues(topic).Add(float64(n))
	}
}

// read fills results from what is stored now, replacing an earlier read.
// It returns the number of record bytes, whether any partition failed
// (which answers at once, as Kafka), and whether a partition holds records
// waiting for the replication high watermark; the other partitions it
// read are noted in idle for watch.
func (f *fetchState) read() (total int, failed, unreplicated bool) {
	b := f.b
	maxBytes := int(f.req.MaxBytes)
	if f.req.Version < 3 || maxBytes <= 0 {
		maxBytes = math.MaxInt32
	}
	f.recs.reset()
	f.spans = f.spans[:0]
	f.idle = f.idle[:0]
	f.total, f.reached = 0, len(f.parts)
	var (
		lastTopic string
		meta      TopicMeta
		known     bool
		leads     func(partition int32) bool
		reader    func(partition int32) PartitionReader
		ahead     func(partition int32)
	)
	for i, p := range f.parts {
		rp := &f.results[i]
		*rp = kmsg.NewFetchResponseTopicPartition()
		rp.Partition = p.partition
		rp.HighWatermark = -1
		rp.LastStableOffset = -1
		rp.LogStartOffset = -1
		f.spans = append(f.spans, span{})
		if i == 0 || p.topic != lastTopic {
			lastTopic = p.topic
			meta, known = b.meta.Topic(p.topic)
			leads = b.topicLeads(p.topic)
			reader = nil
		}
		if p.denied {
			rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			failed = true
			continue
		}
		if !known || p.partition < 0 || p.partition >= meta.Partitions {
			rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			failed = true
			continue
		}
		if !leads(p.partition) {
			rp.ErrorCode = kerr.NotLeaderForPartition.Code
			failed = true
			continue
		}
		if reader == nil {
			reader, ahead = partitionsOf(b.st, p.topic), boundsAheadOf(b.st, p.topic)
		}
		if j := i + boundsAhead; j < len(f.parts) && f.parts[j].topic == p.topic {
			ahead(f.parts[j].partition)
		}
		h := reader(p.partition)
		lo, hi, stored := b.readerBounds(meta, p.partition, h)
		rp.HighWatermark = hi
		rp.LastStableOffset = hi
		rp.LogStartOffset = lo
		// Between the visible and the stored end is not out of range:
		// those records become visible once replicated.
		if p.fetchOffset < lo || p.fetchOffset > stored {
			rp.ErrorCode = kerr.OffsetOutOfRange.Code
			failed = true
			continue
		}
		left := maxBytes - f.total
		if f.reached == len(f.parts) && (left <= 0 || f.total > 0 && p.fetchOffset < hi && !b.now().Before(f.readBy)) {
			f.reached = i
		}
		budget := left
		if p.maxBytes > 0 {
			budget = min(int(p.maxBytes), left)
		}
		if f.reached == len(f.parts) && (budget > 0 || f.total == 0) {
			from := len(f.recs.views)
			n, err := f.readBatches(p, h, f.fetchEnd(p, rp, hi), budget, f.total == 0)
			if err != nil {
				rp.ErrorCode = err.Code
				failed = true
			}
			f.spans[i] = span{from, len(f.recs.views)}
			f.total += n
		}
		if hi < stored {
			// Stored beyond hi already: the high watermark's move wakes it.
			unreplicated = true
		} else {
			f.idle = append(f.idle, i)
		}
	}
	return f.total, failed, unreplicated
}

// watch registers the idle partitions of the last read on w, each from the
// high watermark it was read at: a partition that grew since signals at
// once, so data arriving after the read still wakes the long poll. Only a
// fetch that waits registers: one answered at once (a consumer catching up
// over 10,000 partitions) would register and release every partition.
func (f *fetchState) watch(w Waiter) {
	for _, i := range f.idle {
		p := f.parts[i]
		w.Watch(p.topic, p.partition, f.results[i].HighWatermark)
	}
}

// readBatches keeps views of whole stored batches, read through h, from
// the partition's fetch offset up to hi, none ending past it, while they
// fit in budget, and returns their size. When first is set (nothing else
// in the response yet) the first batch is kept even if it alone exceeds
// the budget, so a consumer never stalls on a batch larger than its
// limits (KIP-74).
func (f *fetchState) readBatches(p fetchPartition, h PartitionReader, hi int64, budget int, first bool) (int, *kerr.Error) {
	size := 0
	pf, _ := h.(prefetcher)
	var warm int64 // offsets below it are prefetched into f.sc.run
	for offset := p.fetchOffset; offset < hi; {
		var (
			v   store.BatchView
			err error
		)
		if pf != nil {
			if offset >= warm {
				warm = min(offset+store.PrefetchRun, hi)
				pf.Prefetch(&f.sc.run, offset, warm)
			}
			v, err = pf.ViewRun(&f.sc.run, offset)
		} else {
			v, err = h.ViewBatch(offset)
		}
		if err != nil {
			if size > 0 {
				break
			}
			if errors.Is(err, ErrStorageRange) {
				return 0, kerr.OffsetOutOfRange
			}
			f.b.log.WithFields(logrus.Fields{"api": "Fetch", "topic": p.topic, "partition": p.partition, "offset": offset, "error": err}).Error("read failed")
			return 0, kerr.KafkaStorageError
		}
		n := len(v.Bytes)
		// Offsets past hi are not visible: serving them would hand the
		// consumer a next offset beyond the high watermark, which may not
		// be stored yet (OFFSET_OUT_OF_RANGE) and may never be if this
		// leader fails. Kafka's high watermark never splits a batch; a
		// batch still being indexed or replicated waits. A batch over the
		// budget waits for the next fetch unless it is the first.
		if v.Next > hi || n > budget && !(first && size == 0) {
			v.Release()
			break
		}
		f.recs.views = append(f.recs.views, v)
		size += n
		offset = v.Next
		if n >= budget {
			break
		}
		budget -= n
	}
	return size, nil
}

// boundsAhead is how many partitions ahead read asks for a partition's
// bounds (boundsAheadOf): each partition's handle and queue are misses at
// 10,000 partitions (the store's partition.Bounds and its handle table
// were 3.8-4.9% of a read-back's samples), and asked for a few partitions
// ahead they come in while the partitions before them are read.
const boundsAhead = 8

// prefetcher is a PartitionReader that can read the entries of a run of
// offsets and warm their records before they are viewed one by one (the
// store's partitions).
type prefetcher interface {
	Prefetch(run *store.Run, from, to int64)
	ViewRun(run *store.Run, offset int64) (store.BatchView, error)
}

// response assembles the answer: every partition read, or for an
// incremental session fetch only those that changed. Its RecordBatches
// are empty; the views of the batches are listed in recs, partition by
// partition in the response's order, for the write (fetch_write.go).
func (f *fetchState) response(s *fetchSession, incremental bool) *kmsg.FetchResponse {
	resp := f.req.ResponseKind().(*kmsg.FetchResponse)
	f.sc.spans, f.sc.idle = f.spans, f.idle
	// An incremental fetch answers only the partitions that changed.
	answers := func(i int) bool {
		sp := f.spans[i]
		return !incremental || f.parts[i].session.changed(&f.results[i], sp.to > sp.from)
	}
	n := 0
	for i := range f.parts {
		if answers(i) {
			n++
		}
	}
	// Each topic's partitions are a run of one array with room for all
	// answered (sized to them, not to the partitions read: an idle
	// consumer's poll answers few), cut at its length so that an append to
	// one (a denied topic's partitions, added after) moves it rather than
	// overwrite the next.
	out := f.sc.resp[:0]
	if cap(out) < n {
		out = make([]kmsg.FetchResponseTopicPartition, 0, n)
	}
	from := 0
	cut := func() {
		if n := len(resp.Topics); n > 0 {
			resp.Topics[n-1].Partitions = out[from:len(out):len(out)]
		}
		from = len(out)
	}
	for i, p := range f.parts {
		if !answers(i) {
			continue
		}
		rp := &f.results[i]
		// Empty, not null, records: librdkafka rejects a null.
		rp.RecordBatches = []byte{}
		f.recs.spans = append(f.recs.spans, f.spans[i])
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != p.topic {
			cut()
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic = p.topic
			rt.TopicID = p.topicID
			resp.Topics = append(resp.Topics, rt)
		}
		out = append(out, *rp)
	}
	cut()
	f.sc.resp = out
	if s != nil {
		resp.SessionID = s.id
		s.answered(f.parts, f.results, f.reached)
	}
	return resp
}
