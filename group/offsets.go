package group

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync"
	"sync/atomic"
)

// TopicPartition names a partition of a user topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// stored is a committed offset and the physical end of the commit-log
// record holding it, which retention must not pass (see RetentionFloor).
type stored struct {
	Offset
	end int64
}

// offsets is the in-memory view of the offsets topic: the last durable
// commit per group and partition. A commit is appended under mu but
// enters the view only once durable (settle), so a commit answered with
// an error is never seen; where commits of one key settle out of log
// order, the one whose record ends later wins.
type offsets struct {
	log        Log
	partitions int32
	mu         sync.RWMutex
	groups     map[string]map[TopicPartition]stored
	// next is, per partition, the offset after the last record appended;
	// last the physical end of the last record appended.
	next []int64
	last int64
	// pending are the commits appended and not yet settled.
	pending map[*pendingCommit]struct{}
	// gone is, per key deleted while other commits were pending, where
	// the deleting record ends, so that an older one settling after it
	// does not bring the key back; emptied once nothing is pending.
	gone   map[offsetKey]int64
	loaded atomic.Bool
}

// pendingCommit is one appended commit waiting to be durable: the
// offsets (nil: delete) its record of partition holds, from offset base
// to the physical end.
type pendingCommit struct {
	partition int32
	base, end int64
	keys      []offsetKey
	values    []*Offset
}

func newOffsets(log Log, partitions int32) *offsets {
	return &offsets{
		log: log, partitions: partitions,
		groups:  make(map[string]map[TopicPartition]stored),
		next:    make([]int64, partitions),
		pending: make(map[*pendingCommit]struct{}),
		gone:    make(map[offsetKey]int64),
	}
}

// useSnapshot applies a snapshot if it is sound and still joins the log:
// nothing between its end and the log's retained records may be missing.
// It reports why not otherwise.
func (o *offsets) useSnapshot(b []byte) error {
	s, err := decodeSnapshot(b)
	if err != nil {
		return err
	}
	if len(s.next) != int(o.partitions) {
		return fmt.Errorf("%w: %d partitions, the offsets topic has %d", ErrBadSnapshot, len(s.next), o.partitions)
	}
	for p, n := range s.next {
		if start := o.log.Start(int32(p)); start > n {
			return fmt.Errorf("%w: partition %d continues at %d, retention kept only from %d", ErrBadSnapshot, p, n, start)
		}
	}
	for _, e := range s.entries {
		o.setLocked(e.key, stored{e.value, e.end})
	}
	copy(o.next, s.next)
	return nil
}

// snapshot copies the view and returns where the last record it covers
// ends. A partition continues at its oldest pending commit, which the view
// does not hold yet: a load replays it.
func (o *offsets) snapshot() (snapshot, int64) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	s := snapshot{next: append([]int64(nil), o.next...)}
	for pc := range o.pending {
		s.next[pc.partition] = min(s.next[pc.partition], pc.base)
	}
	for g, ps := range o.groups {
		for tp, st := range ps {
			s.entries = append(s.entries, snapshotEntry{offsetKey{g, tp.Topic, tp.Partition}, st.Offset, st.end})
		}
	}
	return s, o.last
}

// load rebuilds the view from a snapshot (nil: none) and the records
// after it; it returns how many records it replayed and why a snapshot
// was not used.
func (o *offsets) load(snap []byte) (int, error, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var snapErr error
	if snap != nil {
		if snapErr = o.useSnapshot(snap); snapErr != nil {
			clear(o.groups)
			clear(o.next)
		}
	}
	n := 0
	for p := int32(0); p < o.partitions; p++ {
		next, err := o.log.Replay(p, o.next[p], func(r Record, end int64) error {
			k, err := decodeKey(r.Key)
			if err != nil {
				return fmt.Errorf("group: offsets partition %d: %w", p, err)
			}
			if r.Value == nil {
				o.deleteLocked(k)
				n++
				return nil
			}
			v, err := decodeValue(r.Value)
			if err != nil {
				return fmt.Errorf("group: offsets partition %d, group %q: %w", p, k.group, err)
			}
			o.setLocked(k, stored{v, end})
			n++
			return nil
		})
		if err != nil {
			return n, snapErr, err
		}
		o.next[p] = next
	}
	o.loaded.Store(true)
	return n, snapErr, nil
}

func (o *offsets) setLocked(k offsetKey, s stored) {
	g := o.groups[k.group]
	if g == nil {
		g = make(map[TopicPartition]stored)
		o.groups[k.group] = g
	}
	g[TopicPartition{k.topic, k.partition}] = s
}

func (o *offsets) deleteLocked(k offsetKey) {
	g := o.groups[k.group]
	delete(g, TopicPartition{k.topic, k.partition})
	if len(g) == 0 {
		delete(o.groups, k.group)
	}
}

// commit appends the offsets (nil = delete) as one record, pending until
// settle puts them in the view (or drops them); the caller decides whether
// to wait for it to be durable first.
func (o *offsets) commit(group string, offs map[TopicPartition]*Offset) (*pendingCommit, error) {
	keys := make([]TopicPartition, 0, len(offs))
	for tp := range offs {
		keys = append(keys, tp)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].Topic < keys[j].Topic || keys[i].Topic == keys[j].Topic && keys[i].Partition < keys[j].Partition
	})
	pc := &pendingCommit{partition: PartitionFor(group, o.partitions)}
	recs := make([]Record, 0, len(keys))
	for _, tp := range keys {
		k := offsetKey{group, tp.Topic, tp.Partition}
		r := Record{Key: encodeKey(k)}
		if v := offs[tp]; v != nil {
			r.Value = encodeValue(*v)
		}
		recs = append(recs, r)
		pc.keys, pc.values = append(pc.keys, k), append(pc.values, offs[tp])
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	end, err := o.appendLocked(group, recs)
	if err != nil {
		return nil, fmt.Errorf("group: commit offsets of %q: %w", group, err)
	}
	pc.base, pc.end = o.next[pc.partition]-int64(len(recs)), end
	o.pending[pc] = struct{}{}
	return pc, nil
}

// settle ends a pending commit: durable, its offsets enter the view
// unless a record ending later already set or deleted them; otherwise
// they are dropped (the record stays in the log: a replay after a
// failover applies it, as Kafka's coordinator loading its partition does).
func (o *offsets) settle(pc *pendingCommit, durable bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.pending, pc)
	for i, k := range pc.keys {
		if !durable || o.newerLocked(k, pc.end) {
			continue
		}
		if v := pc.values[i]; v != nil {
			o.setLocked(k, stored{*v, pc.end})
			continue
		}
		o.deleteLocked(k)
		if len(o.pending) > 0 {
			o.gone[k] = pc.end
		}
	}
	if len(o.pending) == 0 {
		clear(o.gone)
	}
}

// newerLocked reports whether the view holds k from a record ending after
// end, or k was deleted by one.
func (o *offsets) newerLocked(k offsetKey, end int64) bool {
	if s, ok := o.groups[k.group][TopicPartition{k.topic, k.partition}]; ok && s.end > end {
		return true
	}
	return o.gone[k] > end
}

func (o *offsets) appendLocked(group string, recs []Record) (int64, error) {
	p := PartitionFor(group, o.partitions)
	end, next, err := o.log.Append(p, recs)
	if err != nil {
		return 0, err
	}
	o.next[p], o.last = next, end
	return end, nil
}

// pendingKeysLocked is the set of keys a pending commit holds.
func (o *offsets) pendingKeysLocked() map[offsetKey]bool {
	keys := make(map[offsetKey]bool)
	for pc := range o.pending {
		for _, k := range pc.keys {
			keys[k] = true
		}
	}
	return keys
}

// get returns a group's committed offsets.
func (o *offsets) get(group string) map[TopicPartition]Offset {
	o.mu.RLock()
	defer o.mu.RUnlock()
	out := make(map[TopicPartition]Offset, len(o.groups[group]))
	for tp, s := range o.groups[group] {
		out[tp] = s.Offset
	}
	return out
}

func (o *offsets) has(group string) bool {
	o.mu.RLock()
	defer o.mu.RUnlock()
	return len(o.groups[group]) > 0
}

func (o *offsets) groupIDs() []string {
	o.mu.RLock()
	defer o.mu.RUnlock()
	ids := make([]string, 0, len(o.groups))
	for id := range o.groups {
		ids = append(ids, id)
	}
	return ids
}

// floor is the lowest physical offset retention may not pass: just inside
// the oldest record holding a live commit (a record never spans files, so
// its file ends after end-1). Before the view is loaded nothing is known
// and nothing may go.
func (o *offsets) floor() int64 {
	if !o.loaded.Load() {
		return 0
	}
	o.mu.RLock()
	defer o.mu.RUnlock()
	floor := int64(math.MaxInt64)
	for _, g := range o.groups {
		for _, s := range g {
			floor = min(floor, s.end-1)
		}
	}
	return floor
}

// rewrite copies every live commit held in the oldest commit-log file to
// the head of the log, waits until the copies are durable and only then
// lets the floor move past the old records, so that retention deleting the
// file never takes a group's last commit with it. A key with a commit
// pending is left for a later pass: a copy of the view's older value
// would land after the pending record and undo it on replay. It returns
// the number of commits copied.
func (o *offsets) rewrite(ctx context.Context) (int, error) {
	limit := o.log.OldestFileEnd()
	if limit <= 0 {
		return 0, nil
	}
	type moved struct {
		group string
		tp    TopicPartition
		from  int64
		to    int64
	}
	var all []moved
	o.mu.Lock()
	pending := o.pendingKeysLocked()
	for group, g := range o.groups {
		var recs []Record
		var mv []moved
		for tp, s := range g {
			if s.end > limit || pending[offsetKey{group, tp.Topic, tp.Partition}] {
				continue
			}
			recs = append(recs, Record{Key: encodeKey(offsetKey{group, tp.Topic, tp.Partition}), Value: encodeValue(s.Offset)})
			mv = append(mv, moved{group: group, tp: tp, from: s.end})
		}
		if len(recs) == 0 {
			continue
		}
		end, err := o.appendLocked(group, recs)
		if err != nil {
			o.mu.Unlock()
			return 0, fmt.Errorf("group: rewrite offsets of %q: %w", group, err)
		}
		for i := range mv {
			mv[i].to = end
		}
		all = append(all, mv...)
	}
	o.mu.Unlock()
	if len(all) == 0 {
		return 0, nil
	}
	var last int64
	for _, m := range all {
		last = max(last, m.to)
	}
	if err := o.log.WaitDurable(ctx, last); err != nil {
		return 0, fmt.Errorf("group: rewrite offsets: %w", err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, m := range all {
		// A commit made meanwhile is newer than the copy: keep it.
		if s, ok := o.groups[m.group][m.tp]; ok && s.end == m.from {
			s.end = m.to
			o.groups[m.group][m.tp] = s
		}
	}
	return len(all), nil
}
