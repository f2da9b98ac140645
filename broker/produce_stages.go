package broker

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// A produce's time, from its frame read off the socket to its response
// written back, is cut into consecutive stages, each observed into
// unilog_produce_stage_seconds{stage}. They add up to the broker's share
// of a client's produce latency, so the stage a tail comes from shows in
// its histogram; unilog_produce_seconds is that share whole (a tail of
// the sum is not the sum of the stages' tails), for a comparison with the
// client's own latency (bench compare's tail table).
//
// The clock lives in the connection (a connection handles one request at
// a time) and the histograms' children are resolved once, so timing a
// produce allocates nothing: a few time.Now calls and atomic adds.
type produceStage uint8

const (
	// stageQueue: read, waiting for the connection's previous request
	// to be answered (requests on a connection are served in order).
	stageQueue produceStage = iota
	stageDecode
	// stageValidate: limits, authorization, topic lookups and each
	// batch's validation, up to the append.
	stageValidate
	// stageAppend: the producer-state checks and the log append, with
	// the wait for the append lock.
	stageAppend
	stageDurable   // acks=-1 under --flush sync: the flush through the append
	stageDispatch  // the dispatcher indexing the append (the high watermark)
	stageReplicate // acks=-1 under sync replication
	stageEncode
	stageWrite // the socket write of the response
	numProduceStages
)

var produceStageNames = [numProduceStages]string{
	stageQueue:     "queue",
	stageDecode:    "decode",
	stageValidate:  "validate",
	stageAppend:    "append",
	stageDurable:   "durable_wait",
	stageDispatch:  "dispatch_wait",
	stageReplicate: "replication_wait",
	stageEncode:    "encode",
	stageWrite:     "write",
}

// produceStages holds each stage's histogram, resolved once, and the
// histogram of their sum.
type produceStages struct {
	vec   *prometheus.HistogramVec
	obs   [numProduceStages]prometheus.Observer
	total prometheus.Histogram
}

// stageBuckets are 10 µs to about 2.6 s: a stage's tail is what they are for.
var stageBuckets = prometheus.ExponentialBuckets(0.00001, 2, 19)

func newProduceStages() *produceStages {
	s := &produceStages{vec: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "unilog", Name: "produce_stage_seconds",
		Help:    "Time of each stage of a produce request, from its frame read to its response written: queue, decode, validate, append, durable_wait, dispatch_wait, replication_wait, encode, write.",
		Buckets: stageBuckets,
	}, []string{"stage"}), total: prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "unilog", Name: "produce_seconds",
		Help:    "Time of a produce request from its frame read to its response written: its stages together (acks=0 produces, which get no response, are not counted).",
		Buckets: stageBuckets,
	})}
	for st, name := range produceStageNames {
		s.obs[st] = s.vec.WithLabelValues(name)
	}
	return s
}

// stageClock times the stages of the produce a connection is handling;
// its zero value (and nil) times nothing, so that the paths a produce
// shares with other requests mark stages unconditionally.
type stageClock struct {
	stages     *produceStages
	read, last time.Time
}

// begin starts timing a produce whose frame was read at read; a zero
// read is a frame handed to the handler directly, which did not queue.
func (c *stageClock) begin(stages *produceStages, read time.Time) {
	if read.IsZero() {
		read = time.Now()
	}
	c.stages, c.read, c.last = stages, read, read
}

// mark observes the time since the previous mark as st's; the response's
// write, the last stage, also the time since the frame was read.
func (c *stageClock) mark(st produceStage) {
	if c == nil || c.stages == nil {
		return
	}
	now := time.Now()
	c.stages.obs[st].Observe(now.Sub(c.last).Seconds())
	c.last = now
	if st == stageWrite {
		c.stages.total.Observe(now.Sub(c.read).Seconds())
	}
}

// end stops timing: the next request may not be a produce.
func (c *stageClock) end() { c.stages = nil }
