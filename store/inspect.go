package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/consumequeue"
	"github.com/unilog/unilog/dispatcher"
)

// InspectOptions control Inspect.
type InspectOptions struct {
	// Verify checks every consume-queue entry against the record it points at.
	Verify bool
	// Progress, if set, is called now and then with bytes scanned so far.
	Progress func(done, total int64)
}

// LogFileReport describes one commit-log file.
type LogFileReport struct {
	Name           string
	Base           int64 // physical offset of the file's first byte
	Size           int64 // file size
	Used           int64 // bytes holding records
	Records        int64
	FirstTimestamp int64 // store timestamp (unix ms) of the first record; 0 if none
	LastTimestamp  int64
}

// PartitionReport describes one topic/partition.
type PartitionReport struct {
	Topic      string
	Partition  int32
	HasQueue   bool  // a consume-queue directory exists
	MinOffset  int64 // consume queue's first offset
	MaxOffset  int64 // consume queue's next offset
	LogNext    int64 // QueueOffset+Count of the partition's last record in the log; -1 if none
	LogRecords int64
}

// Report is what Inspect found.
type Report struct {
	Dir           string
	Checkpoint    Checkpoint
	CheckpointErr error // why the checkpoint could not be read, if it could not
	Unclean       bool  // the abort file is present: the last run did not stop cleanly (or is running)
	Files         []LogFileReport
	LogMin        int64 // first physical offset of the log
	LogEnd        int64 // physical offset after the last valid record
	// FlushedMark is the mark recovery holds the log to: the larger of the
	// checkpoint's CommitLogFlushed and the commit log's own flushed mark
	// (0 if neither is readable). A log ending before it is refused.
	FlushedMark  int64
	Records      int64
	Partitions   []PartitionReport
	Verified     int64    // consume-queue entries checked (with Verify)
	Expired      int64    // consume-queue entries pointing below LogMin, left by retention
	Problems     []string // damage and, with Verify, mismatches
	MoreProblems int      // problems not listed because there were too many
}

const maxProblems = 100

func (r *Report) problem(format string, args ...any) {
	if len(r.Problems) >= maxProblems {
		r.MoreProblems++
		return
	}
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
}

// OK reports whether nothing was wrong.
func (r *Report) OK() bool { return len(r.Problems) == 0 && r.MoreProblems == 0 }

// Inspect reads a data directory without modifying it: no recovery, no
// lock, no file created. It may run beside a live broker, in which case the
// newest records may be reported as not yet dispatched.
func Inspect(dir string, opts InspectOptions) (*Report, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("store: inspect: %w", err)
	}
	rep := &Report{Dir: dir}
	rep.Checkpoint, rep.CheckpointErr = ReadCheckpoint(filepath.Join(dir, checkpointName))
	if rep.CheckpointErr == nil {
		rep.FlushedMark = rep.Checkpoint.CommitLogFlushed
	}
	if m, err := commitlog.ReadFlushedMark(filepath.Join(dir, "commitlog")); err == nil {
		rep.FlushedMark = max(rep.FlushedMark, m)
	}
	if _, err := os.Stat(filepath.Join(dir, abortName)); err == nil {
		rep.Unclean = true
	}
	lr, err := openLogReader(dir)
	if err != nil {
		return nil, err
	}
	defer lr.Close()

	parts := map[consumequeue.ID]*PartitionReport{}
	part := func(id consumequeue.ID) *PartitionReport {
		p := parts[id]
		if p == nil {
			p = &PartitionReport{Topic: id.Topic, Partition: id.Partition, LogNext: -1}
			parts[id] = p
		}
		return p
	}
	type topicID struct {
		topic string
		id    commitlog.TopicID
	}
	names := map[topicID]string{} // QueueName once per incarnation, not per record
	if err := scanLog(lr, rep, opts.Progress, func(r *commitlog.Record) {
		k := topicID{r.Topic, r.TopicID}
		name, ok := names[k]
		if !ok {
			name = QueueName(r.Topic, r.TopicID)
			names[k] = name
		}
		p := part(consumequeue.ID{Topic: name, Partition: r.Partition})
		p.LogNext = r.QueueOffset + int64(max(r.Count, 1))
		p.LogRecords++
	}); err != nil {
		return nil, err
	}

	cqDir := filepath.Join(dir, "consumequeue")
	small, err := consumequeue.ReadJournalQueues(cqDir)
	if errors.Is(err, consumequeue.ErrCorrupt) {
		rep.problem("consume-queue journal: %v", err)
	} else if err != nil {
		return nil, err
	}
	ids, err := consumequeue.ListQueues(cqDir)
	if err != nil {
		return nil, fmt.Errorf("store: inspect: %w", err)
	}
	// A small queue with a directory is an unconfirmed promotion (see
	// journalQueues): listed once, from the journal.
	have := make(map[consumequeue.ID]bool, len(ids))
	for _, id := range ids {
		have[id] = true
	}
	for id := range small {
		if !have[id] {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, consumequeue.ID.Compare)
	for _, id := range ids {
		q := small[id]
		if q == nil {
			if q, err = consumequeue.ReadQueue(cqDir, id); err != nil {
				return nil, err
			}
		}
		p := part(id)
		p.HasQueue, p.MinOffset, p.MaxOffset = true, q.Min, q.Max
		for _, d := range q.Damage {
			rep.problem("consume queue %s/%d: %s", id.Topic, id.Partition, d)
		}
		if opts.Verify {
			verifyQueue(lr, rep, q)
			if p.LogNext > q.Max {
				rep.problem("consume queue %s/%d ends at offset %d but the log holds offsets up to %d (not dispatched)",
					id.Topic, id.Partition, q.Max, p.LogNext)
			}
		}
	}
	for _, p := range parts {
		rep.Partitions = append(rep.Partitions, *p)
	}
	sort.Slice(rep.Partitions, func(i, j int) bool {
		a, b := rep.Partitions[i], rep.Partitions[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	return rep, nil
}

// Verify inspects dir with every check on and returns an error describing
// the first problems if anything is wrong.
func Verify(dir string) error {
	rep, err := Inspect(dir, InspectOptions{Verify: true})
	if err != nil {
		return err
	}
	if rep.OK() {
		return nil
	}
	n := len(rep.Problems) + rep.MoreProblems
	return fmt.Errorf("%w: %s: %d problem(s), first: %s", ErrCorrupt, dir, n, rep.Problems[0])
}

// openLogReader opens the commit log of the data directory dir read-only;
// a directory without one reads as an empty log.
func openLogReader(dir string) (*commitlog.Reader, error) {
	lr, err := commitlog.OpenReader(filepath.Join(dir, "commitlog"))
	if errors.Is(err, fs.ErrNotExist) {
		return &commitlog.Reader{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: inspect: %w", err)
	}
	return lr, nil
}

// scanLog walks every file in order, filling the file reports, and reports
// where the log ends if that is damage or before the flushed mark.
func scanLog(lr *commitlog.Reader, rep *Report, progress func(done, total int64), fn func(r *commitlog.Record)) error {
	files := lr.Files()
	var total, done int64
	for _, f := range files {
		total += f.Size
	}
	if len(files) > 0 {
		rep.LogMin = files[0].Base
		rep.LogEnd = rep.LogMin
	}
	ended := false
	var endWhy string // what is at LogEnd, for the flushed-mark check
	for i, f := range files {
		fr := LogFileReport{Name: f.Name, Base: f.Base, Size: f.Size}
		if i > 0 {
			prev := files[i-1]
			if want := prev.Base + prev.Size; f.Base != want && !ended {
				rep.problem("commit-log file %s starts at %d, previous file ends at %d", f.Name, f.Base, want)
				ended, endWhy = true, fmt.Sprintf("a hole: file %s ends at %d and the next file starts at %d", prev.Name, want, f.Base)
			}
		}
		var lastReported int64
		scan, err := lr.ScanFile(i, func(r *commitlog.Record) error {
			if fr.Records == 0 {
				fr.FirstTimestamp = r.StoreTimestamp
			}
			fr.LastTimestamp = r.StoreTimestamp
			fr.Records++
			if progress != nil && r.PhysOffset-f.Base-lastReported >= 16<<20 {
				lastReported = r.PhysOffset - f.Base
				progress(done+lastReported, total)
			}
			if !ended {
				fn(r)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("store: inspect: %w", err)
		}
		fr.Used = scan.Used
		switch {
		case ended && fr.Records > 0:
			rep.problem("commit-log file %s holds %d records after the end of the log at %d", f.Name, fr.Records, rep.LogEnd)
		case !ended:
			rep.Records += fr.Records
			rep.LogEnd = f.Base + scan.Used
		}
		if !ended && !scan.Rolled {
			// Damage, or a zero region: the log ends here, and a later file
			// with records would be a hole.
			ended = true
			endWhy = fmt.Sprintf("commit-log file %s at position %d (offset %d): zero bytes where a record would be", f.Name, scan.Used, rep.LogEnd)
			if scan.Damage != nil {
				endWhy = fmt.Sprintf("commit-log file %s at position %d (offset %d): %v", f.Name, scan.Used, rep.LogEnd, scan.Damage)
				if rep.LogEnd >= rep.FlushedMark {
					rep.problem("commit log ends with damage at or after the flushed mark %d (a torn tail; the next start cuts it): %s",
						rep.FlushedMark, endWhy)
				} else {
					rep.problem("commit log ends with damage: %s", endWhy)
				}
			}
		}
		done += f.Size
		if progress != nil {
			progress(done, total)
		}
		rep.Files = append(rep.Files, fr)
	}
	if mark := rep.FlushedMark; rep.LogEnd < mark {
		if endWhy == "" {
			endWhy = fmt.Sprintf("the files end at offset %d", rep.LogEnd)
		}
		rep.problem("commit log ends at offset %d, before the flushed mark %d: %d bytes of durable records are damaged or missing (%s); the broker refuses to start until --recover-truncate cuts the log there",
			rep.LogEnd, mark, mark-rep.LogEnd, endWhy)
	}
	return nil
}

// verifyQueue checks each entry of q against the record it points at.
// An entry's timestamp is the largest batch max timestamp along the queue
// so far (consumequeue.Entry): the record's own, or the entry before's
// when that is larger; the first entry may carry one from entries
// retention removed. One written before consume-queue version 2 holds the
// record's store time instead.
func verifyQueue(lr *commitlog.Reader, rep *Report, q *consumequeue.QueueContents) {
	topic, id := dispatcher.ParseQueueName(q.ID.Topic)
	var last *commitlog.Record
	for i, e := range q.Entries {
		if e.PhysOffset < rep.LogMin {
			rep.Expired++
			continue
		}
		rep.Verified++
		if e.PhysOffset >= rep.LogEnd {
			rep.problem("consume queue %s/%d offset %d points at %d, past the end of the log at %d",
				q.ID.Topic, q.ID.Partition, e.Offset, e.PhysOffset, rep.LogEnd)
			continue
		}
		r := last
		if r == nil || r.PhysOffset != e.PhysOffset {
			var err error
			r, err = lr.Read(e.PhysOffset)
			if err != nil {
				rep.problem("consume queue %s/%d offset %d: %v", q.ID.Topic, q.ID.Partition, e.Offset, err)
				last = nil
				continue
			}
			last = r
		}
		switch {
		case r.Topic != topic || r.TopicID != id || r.Partition != q.ID.Partition:
			rep.problem("consume queue %s/%d offset %d points at a record of %s/%d", q.ID.Topic, q.ID.Partition, e.Offset, QueueName(r.Topic, r.TopicID), r.Partition)
		case e.Offset < r.QueueOffset || e.Offset >= r.QueueOffset+int64(max(r.Count, 1)):
			rep.problem("consume queue %s/%d offset %d points at the record of offsets [%d, %d)",
				q.ID.Topic, q.ID.Partition, e.Offset, r.QueueOffset, r.QueueOffset+int64(max(r.Count, 1)))
		case e.Size != r.TotalSize:
			rep.problem("consume queue %s/%d offset %d: entry size %d, record size %d", q.ID.Topic, q.ID.Partition, e.Offset, e.Size, r.TotalSize)
		case !entryTimeOK(e.Timestamp, r, q.Entries[:i]):
			rep.problem("consume queue %s/%d offset %d: entry timestamp %d, record timestamp %d (stored at %d)",
				q.ID.Topic, q.ID.Partition, e.Offset, e.Timestamp, r.ProducerTimestamp, r.StoreTimestamp)
		}
	}
}

// entryTimeOK reports whether ts is what an entry for r may hold after
// the entries before it.
func entryTimeOK(ts int64, r *commitlog.Record, before []consumequeue.FileEntry) bool {
	if ts == r.StoreTimestamp {
		return true
	}
	if len(before) == 0 {
		return ts >= r.ProducerTimestamp
	}
	return ts == max(before[len(before)-1].Timestamp, r.ProducerTimestamp)
}

// Dump calls fn for the records of one partition holding offsets from
// `from` on, at most limit records (limit <= 0: all), read through the
// partition's consume queue. topic is a topic name, or a queue name
// (QueueName) to pick one incarnation when the directory holds several.
// A record that spans several offsets (a Kafka batch) is passed once. The
// record's slices alias the mapped file and are valid only during the call.
func Dump(dir, topic string, partition int32, from int64, limit int, fn func(r *commitlog.Record) error) error {
	cqDir := filepath.Join(dir, "consumequeue")
	small, err := consumequeue.ReadJournalQueues(cqDir)
	if err != nil {
		return err
	}
	name, err := dumpQueueName(cqDir, topic, small)
	if err != nil {
		return fmt.Errorf("store: dump %s/%d: %w", topic, partition, err)
	}
	id := consumequeue.ID{Topic: name, Partition: partition}
	q := small[id]
	if q == nil {
		if _, err := os.Stat(consumequeue.QueueDir(cqDir, id)); err != nil {
			return fmt.Errorf("store: dump %s/%d: no consume queue: %w", topic, partition, err)
		}
		if q, err = consumequeue.ReadQueue(cqDir, id); err != nil {
			return err
		}
	}
	lr, err := openLogReader(dir)
	if err != nil {
		return err
	}
	defer lr.Close()
	i := sort.Search(len(q.Entries), func(i int) bool { return q.Entries[i].Offset >= from })
	prev := int64(-1)
	for n := 0; i < len(q.Entries) && (limit <= 0 || n < limit); i++ {
		e := q.Entries[i]
		if e.PhysOffset == prev {
			continue
		}
		prev = e.PhysOffset
		r, err := lr.Read(e.PhysOffset)
		if err != nil {
			return fmt.Errorf("store: dump %s/%d offset %d: %w", topic, partition, e.Offset, err)
		}
		if err := fn(r); err != nil {
			return err
		}
		n++
	}
	return nil
}

// dumpQueueName resolves a topic to the one queue name of its
// incarnations, among the queue directories and the small queues; a name
// that is a queue name itself is taken as it is.
func dumpQueueName(cqDir, topic string, small map[consumequeue.ID]*consumequeue.QueueContents) (string, error) {
	ids, err := consumequeue.ListQueues(cqDir)
	if err != nil {
		return "", err
	}
	all := make(map[string]bool)
	for _, id := range ids {
		all[id.Topic] = true
	}
	for id := range small {
		all[id.Topic] = true
	}
	if all[topic] {
		return topic, nil
	}
	var names []string
	for name := range all {
		if t, _ := dispatcher.ParseQueueName(name); t == topic {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	switch len(names) {
	case 0:
		return topic, nil // reported as no consume queue
	case 1:
		return names[0], nil
	default:
		return "", fmt.Errorf("%d incarnations %v: name one", len(names), names)
	}
}
