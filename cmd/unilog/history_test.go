package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/internal/logcheck"
)

// Clients that record what they see into a logcheck.History, for the
// failover tests. Every value produced is unique in the test.

func logKey(topic string, partition int32) string { return fmt.Sprintf("%s/%d", topic, partition) }

func offsetKey(group, topic string, partition int32) string {
	return group + "/" + logKey(topic, partition)
}

// recordReads adds one Read per run of consecutive offsets in fs, all
// between call and ret. A client fetches ahead of the poll, so a record
// may have been read before call: that only loosens the check (a log
// only grows), never makes it fail wrongly.
func recordReads(h *logcheck.History, client int, fs kgo.Fetches, call, ret int64) {
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		var from int64
		var values []string
		flush := func() {
			if len(values) > 0 {
				h.Record(client, logcheck.Input{Kind: logcheck.Read, Key: logKey(p.Topic, p.Partition), From: from},
					logcheck.Output{Values: values, End: -1}, call, ret)
			}
		}
		for _, r := range p.Records {
			if len(values) == 0 || r.Offset != from+int64(len(values)) {
				flush()
				from, values = r.Offset, nil
			}
			values = append(values, string(r.Value))
		}
		flush()
	})
}

// errorLog collects the errors clients surfaced, by text.
type errorLog struct {
	mu   sync.Mutex
	seen map[string]int
}

func (e *errorLog) add(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.seen == nil {
		e.seen = map[string]int{}
	}
	e.seen[err.Error()]++
}

func (e *errorLog) snapshot() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]int{}
	for k, v := range e.seen {
		out[k] = v
	}
	return out
}

// producer appends unique values round robin over the partitions, one
// record every interval, until ctx ends; then it waits for every answer.
type producer struct {
	id         int
	cl         *kgo.Client
	topic      string
	partitions int32
	acked      *atomic.Int64
	errs       *errorLog
	// firstAck, when set, hears of every acknowledgement.
	firstAck *firstAck
}

// firstAck tells when the first record produced after a moment was
// acknowledged: the end of a failover as a client sees it. A record
// issued after a leader's fault can only be taken by the next leader.
type firstAck struct {
	mu    sync.Mutex
	since time.Time
	first chan time.Time
}

// after arms the watch for records issued after t.
func (f *firstAck) after(t time.Time) <-chan time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.since, f.first = t, make(chan time.Time, 1)
	return f.first
}

func (f *firstAck) acked(issued, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.first != nil && issued.After(f.since) {
		f.first <- at
		f.first = nil
	}
}

func (p *producer) run(ctx context.Context, h *logcheck.History, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for seq := 0; ; seq++ {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := p.cl.Flush(fctx); err != nil {
				p.errs.add(fmt.Errorf("flush: %w", err))
			}
			return
		case <-tick.C:
		}
		part := int32(seq) % p.partitions
		v := fmt.Sprintf("p%d-%d", p.id, seq)
		op := h.Begin(p.id, logcheck.Input{Kind: logcheck.Append, Key: logKey(p.topic, part), Value: v})
		issued := time.Now()
		p.cl.Produce(context.Background(), &kgo.Record{Topic: p.topic, Partition: part, Value: []byte(v)}, func(r *kgo.Record, err error) {
			if err != nil {
				p.errs.add(err)
				op.End(logcheck.Output{Unknown: true, End: -1})
				return
			}
			p.acked.Add(1)
			if p.firstAck != nil {
				p.firstAck.acked(issued, time.Now())
			}
			op.End(logcheck.Output{Offset: r.Offset, End: -1})
		})
	}
}

// readAll polls cl until ctx ends, recording every record it is served.
func readAll(ctx context.Context, h *logcheck.History, client int, cl *kgo.Client) {
	for ctx.Err() == nil {
		call := h.Now()
		fs := cl.PollFetches(ctx)
		recordReads(h, client, fs, call, h.Now())
	}
}

// consumeAndCommit is a group member: it records what it reads and every
// commit of the offsets past it.
func consumeAndCommit(ctx context.Context, h *logcheck.History, client int, cl *kgo.Client, group string) {
	for ctx.Err() == nil {
		call := h.Now()
		fs := cl.PollFetches(ctx)
		recordReads(h, client, fs, call, h.Now())
		offsets := map[string]map[int32]kgo.EpochOffset{}
		ops := map[string]logcheck.Op{}
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			if len(p.Records) == 0 {
				return
			}
			last := p.Records[len(p.Records)-1]
			if offsets[p.Topic] == nil {
				offsets[p.Topic] = map[int32]kgo.EpochOffset{}
			}
			offsets[p.Topic][p.Partition] = kgo.EpochOffset{Epoch: last.LeaderEpoch, Offset: last.Offset + 1}
			key := offsetKey(group, p.Topic, p.Partition)
			ops[key] = h.Begin(client, logcheck.Input{Kind: logcheck.Commit, Key: key, Offset: last.Offset + 1})
		})
		if len(ops) == 0 {
			continue
		}
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cl.CommitOffsetsSync(cctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err == nil {
				for _, t := range resp.Topics {
					for _, p := range t.Partitions {
						key := offsetKey(group, t.Topic, p.Partition)
						if op, ok := ops[key]; ok && p.ErrorCode == 0 {
							op.End(logcheck.Output{Offset: -1, End: -1})
							delete(ops, key)
						}
					}
				}
			}
			// The rest stay open: their outcome is unknown.
		})
		cancel()
	}
}

// fetchOffsets reads the group's committed offsets of every partition
// every interval until ctx ends.
func fetchOffsets(ctx context.Context, h *logcheck.History, client int, adm *kadm.Client, group, topic string, partitions int32, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		fetchOffsetsOnce(ctx, h, client, adm, group, topic, partitions)
	}
}

// fetchOffsetsOnce records one read of the group's offsets; a failed
// request records nothing (it saw nothing).
func fetchOffsetsOnce(ctx context.Context, h *logcheck.History, client int, adm *kadm.Client, group, topic string, partitions int32) error {
	call := h.Now()
	resp, err := adm.FetchOffsets(ctx, group)
	ret := h.Now()
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return err
	}
	for p := range partitions {
		at := int64(-1)
		if o, ok := resp.Lookup(topic, p); ok {
			at = o.At
		}
		h.Record(client, logcheck.Input{Kind: logcheck.FetchOffset, Key: offsetKey(group, topic, p)},
			logcheck.Output{Offset: at, End: -1}, call, ret)
	}
	return nil
}

// finalRead records, with nothing in flight, a read of each partition
// from its start to the end its leader reports: the last word on what the
// log holds. It returns each partition's values.
func finalRead(t *testing.T, h *logcheck.History, client int, seeds []string, topic string, partitions int32) [][]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	call := h.Now()
	ends, err := kadm.NewClient(admCl).ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatalf("list end offsets: %v", err)
	}
	var logs [][]string
	for p := range partitions {
		o, _ := ends.Lookup(topic, p)
		values := consumeRange(t, ctx, seeds, topic, p, o.Offset)
		h.Record(client, logcheck.Input{Kind: logcheck.Read, Key: logKey(topic, p)},
			logcheck.Output{Values: values, End: o.Offset}, call, h.Now())
		logs = append(logs, values)
	}
	return logs
}

// consumeRange returns the values of partition p at offsets [0, end).
func consumeRange(t *testing.T, ctx context.Context, seeds []string, topic string, p int32, end int64) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var values []string
	for int64(len(values)) < end {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("partition %d: read %d of %d records: %v", p, len(values), end, err)
		}
		for _, r := range fs.Records() {
			if r.Offset != int64(len(values)) {
				t.Fatalf("partition %d: record at offset %d after %d records", p, r.Offset, len(values))
			}
			values = append(values, string(r.Value))
		}
	}
	return values[:end]
}

// checkHistory fails the test unless h is linearizable. The evidence of a
// failure goes outside t.TempDir, which goes with the test: a drawing of
// the offending partitions (HTML) and the whole history (JSON).
func checkHistory(t *testing.T, h *logcheck.History, name string) {
	t.Helper()
	base := filepath.Join(os.TempDir(), fmt.Sprintf("unilog-%s-%d", name, time.Now().UnixNano()))
	start := time.Now()
	err := h.Check(5*time.Minute, base+".html")
	t.Logf("history: %v; checked in %s", h.Stats(), time.Since(start).Round(time.Millisecond))
	if err == nil {
		return
	}
	if werr := h.WriteJSON(base + ".json"); werr != nil {
		t.Errorf("%v (%v)", err, werr)
		return
	}
	t.Errorf("%v; history in %s.json", err, base)
}
