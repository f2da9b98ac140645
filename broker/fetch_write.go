package broker

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/internal/fileops"
	"github.com/unilog/unilog/store"
)

// A Fetch response is written without copying its records into it: the
// batches stay views of the commit log's mapping (store.BatchView) and
// the socket is given a vector (writev) of the encoded response around
// them, so a record goes from the page cache to the socket in the
// kernel's one copy instead of mapping → arena → response buffer →
// socket. Batches of sendfileMin and more skip even that copy: they go
// by sendfile from the log file (fetch_sendfile.go). The views hold their
// log files, so retention deleting a file while its bytes are being sent
// leaves them valid; they are released once the response is written
// (conn.releaseResponse).
//
// kmsg encodes a partition's records as one byte slice, which would have
// to be a copy, so the response is encoded here as kmsg does for the
// versions served (4 to 12), the records left out and their places noted;
// TestFetchHeadEncoding holds it to kmsg byte for byte.
//
// Over TLS (or any connection but plain TCP) the records are copied into
// the response buffer instead: the encryption reads them in this process,
// where a fault on the mapping (a media error) must be caught (Guard),
// while a writev's fault is the kernel's EFAULT, an error of the write.

// errFetchTags: the encoder writes no tagged fields, which the broker
// never sets; a response with some is refused rather than sent without.
var errFetchTags = errors.New("fetch response has tagged fields")

// fetchRecords are the record batches of the Fetch response a connection
// is answering, held until it is written.
type fetchRecords struct {
	views []store.BatchView
	// spans[i] are the views of the i-th partition of the response, in
	// its order; partitions after the last span (added to the response
	// after the read, such as denied topics) carry their RecordBatches.
	spans []span
	// splices are where in the encoded head each span goes.
	splices []splice
	// scratch is the fetch's per-partition slices, from handleFetch until
	// the response is written (releaseScratch).
	scratch *fetchScratch
}

// fetchScratch holds the arrays of a fetch's per-partition slices: the
// partitions read, their results, spans and idle ones, and the response's
// partitions. At 10,000 partitions they came to 13 MB a fetch (most of it
// the response's partitions, grown one append at a time), as much garbage
// for each poll of an idle consumer; pooled, a fetch of a size seen before
// allocates none of it. The pool, not the connection, keeps them, so the
// collector frees what no fetch has used for a while.
type fetchScratch struct {
	parts   []fetchPartition
	results []kmsg.FetchResponseTopicPartition
	spans   []span
	idle    []int
	resp    []kmsg.FetchResponseTopicPartition
	run     store.Run // the entries of the partition being read, a run at a time
}

var fetchScratchPool = sync.Pool{New: func() any { return new(fetchScratch) }}

// takeScratch returns the scratch of the fetch being answered.
func (r *fetchRecords) takeScratch() *fetchScratch {
	if r.scratch == nil {
		r.scratch = fetchScratchPool.Get().(*fetchScratch)
	}
	return r.scratch
}

// keptScratch is the most partitions whose scratch goes back to the pool
// (416 bytes a partition: about 7 MB of arrays): a fetch over more
// allocates its own, as before, so that a consumer of 100,000 partitions
// leaves no 42 MB in the pool.
const keptScratch = 16384

// releaseScratch gives the scratch back once the response that refers to
// it is written. Its arrays keep what the last fetch left, which the next
// overwrites before reading.
func (r *fetchRecords) releaseScratch() {
	if r.scratch != nil && cap(r.scratch.results) <= keptScratch {
		fetchScratchPool.Put(r.scratch)
	}
	r.scratch = nil
}

type span struct{ from, to int }

type splice struct {
	at int
	span
}

// fetched returns the connection's record views, emptied, for a fetch
// to fill.
func (c *conn) fetched() *fetchRecords {
	c.fetch.reset()
	return &c.fetch
}

// reset releases every view.
func (r *fetchRecords) reset() {
	for i := range r.views {
		r.views[i].Release()
	}
	r.views, r.spans, r.splices = r.views[:0], r.spans[:0], r.splices[:0]
}

func (r *fetchRecords) bytes(sp span) int {
	n := 0
	for _, v := range r.views[sp.from:sp.to] {
		n += len(v.Bytes)
	}
	return n
}

// encodeFetch frames a Fetch response whose records are views: the head
// (everything but the records) in the response buffer and, on plain TCP,
// the vector to write in c.vec; elsewhere the records copied in place.
func (c *conn) encodeFetch(corr int32, resp *kmsg.FetchResponse) ([]byte, error) {
	_, vectored := c.nc.(*net.TCPConn)
	c.out = responseBuffers.Get()
	buf := append(c.out.B[:0], 0, 0, 0, 0, 0, 0, 0, 0)
	if !vectored {
		// Grown once to hold the records, not by doubling as they come.
		n := 0
		for _, sp := range c.fetch.spans {
			n += c.fetch.bytes(sp)
		}
		buf = slices.Grow(buf, n+len(c.fetch.spans)*64)
	}
	if resp.IsFlexible() {
		buf = append(buf, 0)
	}
	var err error
	if ferr := fileops.Guard(func() { buf, err = c.fetch.appendHead(buf, resp, !vectored) }); ferr != nil {
		err = fmt.Errorf("copy fetched records: %w", ferr)
	}
	c.out.B = buf
	if err != nil {
		return nil, err
	}
	size := len(buf)
	for _, s := range c.fetch.splices {
		size += c.fetch.bytes(s.span)
	}
	kbin.AppendInt32(buf[:0], int32(size-4))
	kbin.AppendInt32(buf[:4], corr)
	if len(c.fetch.splices) > 0 {
		c.vec = c.fetch.vector(c.vec[:0], buf)
	}
	return buf, nil
}

// vector lists the head's pieces with the spliced batches between them.
func (r *fetchRecords) vector(dst net.Buffers, head []byte) net.Buffers {
	at := 0
	for _, s := range r.splices {
		dst = append(dst, head[at:s.at])
		for _, v := range r.views[s.from:s.to] {
			dst = append(dst, v.Bytes)
		}
		at = s.at
	}
	return append(dst, head[at:])
}

// appendHead appends resp as kmsg's FetchResponse.AppendTo would, with
// the records of the partitions r.spans covers taken from the views:
// copied in when inline, otherwise left out and noted in r.splices. Run
// it under fileops.Guard when inline.
func (r *fetchRecords) appendHead(dst []byte, resp *kmsg.FetchResponse, inline bool) ([]byte, error) {
	v := resp.Version
	if v < 4 || v > 12 {
		return dst, fmt.Errorf("fetch response version %d not encoded here", v)
	}
	flexible := v >= 12
	if resp.UnknownTags.Len() > 0 || len(resp.Brokers) > 0 {
		return dst, errFetchTags
	}
	dst = kbin.AppendInt32(dst, resp.ThrottleMillis)
	if v >= 7 {
		dst = kbin.AppendInt16(dst, resp.ErrorCode)
		dst = kbin.AppendInt32(dst, resp.SessionID)
	}
	dst = appendArrayLen(dst, len(resp.Topics), flexible)
	n := 0 // partitions so far: the index into r.spans
	for i := range resp.Topics {
		t := &resp.Topics[i]
		if t.UnknownTags.Len() > 0 {
			return dst, errFetchTags
		}
		dst = appendString(dst, t.Topic, flexible)
		dst = appendArrayLen(dst, len(t.Partitions), flexible)
		for j := range t.Partitions {
			p := &t.Partitions[j]
			if flexible && (p.UnknownTags.Len() > 0 || p.DivergingEpoch.Epoch != -1 || p.DivergingEpoch.EndOffset != -1 ||
				p.CurrentLeader.LeaderID != -1 || p.CurrentLeader.LeaderEpoch != -1 || p.SnapshotID.EndOffset != -1 || p.SnapshotID.Epoch != -1) {
				return dst, errFetchTags
			}
			dst = kbin.AppendInt32(dst, p.Partition)
			dst = kbin.AppendInt16(dst, p.ErrorCode)
			dst = kbin.AppendInt64(dst, p.HighWatermark)
			dst = kbin.AppendInt64(dst, p.LastStableOffset)
			if v >= 5 {
				dst = kbin.AppendInt64(dst, p.LogStartOffset)
			}
			if flexible {
				dst = kbin.AppendCompactNullableArrayLen(dst, len(p.AbortedTransactions), p.AbortedTransactions == nil)
			} else {
				dst = kbin.AppendNullableArrayLen(dst, len(p.AbortedTransactions), p.AbortedTransactions == nil)
			}
			for _, a := range p.AbortedTransactions {
				if a.UnknownTags.Len() > 0 {
					return dst, errFetchTags
				}
				dst = kbin.AppendInt64(dst, a.ProducerID)
				dst = kbin.AppendInt64(dst, a.FirstOffset)
				if flexible {
					dst = append(dst, 0)
				}
			}
			if v >= 11 {
				dst = kbin.AppendInt32(dst, p.PreferredReadReplica)
			}
			if n < len(r.spans) && r.spans[n].to > r.spans[n].from {
				dst = r.appendRecords(dst, r.spans[n], flexible, inline)
			} else {
				dst = appendNullableBytes(dst, p.RecordBatches, flexible)
			}
			n++
			if flexible {
				dst = append(dst, 0)
			}
		}
		if flexible {
			dst = append(dst, 0)
		}
	}
	if flexible {
		dst = append(dst, 0)
	}
	return dst, nil
}

// appendRecords appends the length of a span's batches, then the
// batches themselves (inline) or a note of where they go.
func (r *fetchRecords) appendRecords(dst []byte, sp span, flexible, inline bool) []byte {
	size := r.bytes(sp)
	if flexible {
		dst = kbin.AppendUvarint(dst, uint32(size)+1)
	} else {
		dst = kbin.AppendInt32(dst, int32(size))
	}
	if !inline {
		r.splices = append(r.splices, splice{at: len(dst), span: sp})
		return dst
	}
	for _, v := range r.views[sp.from:sp.to] {
		dst = append(dst, v.Bytes...)
	}
	return dst
}

func appendArrayLen(dst []byte, n int, flexible bool) []byte {
	if flexible {
		return kbin.AppendCompactArrayLen(dst, n)
	}
	return kbin.AppendArrayLen(dst, n)
}

func appendString(dst []byte, s string, flexible bool) []byte {
	if flexible {
		return kbin.AppendCompactString(dst, s)
	}
	return kbin.AppendString(dst, s)
}

func appendNullableBytes(dst, b []byte, flexible bool) []byte {
	if flexible {
		return kbin.AppendCompactNullableBytes(dst, b)
	}
	return kbin.AppendNullableBytes(dst, b)
}
