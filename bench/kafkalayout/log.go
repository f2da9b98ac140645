package kafkalayout

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/unilog/unilog/commitlog"
)

// Log is a set of partitions under one directory, like one Kafka log.dir.
type Log struct {
	opts Options

	mu     sync.RWMutex
	parts  map[partKey]*partition
	closed bool

	stop  chan struct{}
	wg    sync.WaitGroup
	bgMu  sync.Mutex
	bgErr error // first error of a background flush
}

type partKey struct {
	topic string
	id    int32
}

// Open loads every <topic>-<partition> directory under opts.Dir, recovering
// each partition's active segment, and starts the flusher when the flush
// mode asks for one.
func Open(opts Options) (*Log, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("kafkalayout: open %s: %w", opts.Dir, err)
	}
	l := &Log{opts: opts, parts: make(map[partKey]*partition), stop: make(chan struct{})}
	ents, err := os.ReadDir(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("kafkalayout: open %s: %w", opts.Dir, err)
	}
	for _, e := range ents {
		topic, id, ok := parseDirName(e.Name())
		if !ok || !e.IsDir() {
			continue
		}
		p := l.newPartition(topic, id)
		if err := p.load(); err != nil {
			return nil, errors.Join(err, l.closeParts())
		}
		l.parts[partKey{topic, id}] = p
	}
	if opts.Flush == FlushInterval {
		l.wg.Add(1)
		go l.flusher()
	}
	return l, nil
}

func dirName(topic string, id int32) string { return topic + "-" + strconv.Itoa(int(id)) }

func parseDirName(name string) (string, int32, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return "", 0, false
	}
	id, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || id < 0 {
		return "", 0, false
	}
	return name[:i], int32(id), true
}

func (l *Log) newPartition(topic string, id int32) *partition {
	return &partition{topic: topic, id: id, dir: filepath.Join(l.opts.Dir, dirName(topic, id)), opts: &l.opts, l: l}
}

// CreatePartition makes the directory and first segment of a partition, as
// topic creation does in Kafka; it is a no-op for an existing partition.
func (l *Log) CreatePartition(topic string, id int32) error {
	_, err := l.partition(topic, id, true)
	return err
}

func (l *Log) partition(topic string, id int32, create bool) (*partition, error) {
	k := partKey{topic, id}
	l.mu.RLock()
	p, ok := l.parts[k]
	closed := l.closed
	l.mu.RUnlock()
	if closed {
		return nil, ErrClosed
	}
	if ok {
		return p, nil
	}
	if !create {
		return nil, fmt.Errorf("kafkalayout: %s: %w", dirName(topic, id), ErrNoPartition)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, ErrClosed
	}
	if p, ok := l.parts[k]; ok {
		return p, nil
	}
	p = l.newPartition(topic, id)
	if err := os.Mkdir(p.dir, 0o755); err != nil {
		return nil, fmt.Errorf("kafkalayout: create partition: %w", err)
	}
	seg, err := createSegment(p.dir, 0, &l.opts)
	if err != nil {
		os.RemoveAll(p.dir)
		return nil, err
	}
	p.segments = []*segment{seg}
	l.parts[k] = p
	return p, nil
}

// Append writes ms to topic/partition as one batch, creating the partition on
// first use, and returns the first offset assigned. Every message must name
// that topic and partition.
func (l *Log) Append(topic string, id int32, ms []commitlog.Message) (int64, error) {
	if len(ms) == 0 {
		return 0, errors.New("kafkalayout: empty batch")
	}
	if err := l.takeBackgroundErr(); err != nil {
		return 0, err
	}
	p, err := l.partition(topic, id, true)
	if err != nil {
		return 0, err
	}
	return p.append(ms)
}

// Read calls fn for the records of topic/partition from offset on, up to
// about maxBytes, and returns the offset after the last one delivered. The
// record passed to fn is valid only during the call.
func (l *Log) Read(topic string, id int32, offset int64, maxBytes int, fn func(*commitlog.Record) error) (int64, error) {
	p, err := l.partition(topic, id, false)
	if err != nil {
		return offset, err
	}
	return p.read(offset, maxBytes, fn)
}

// EndOffset is the next offset topic/partition will assign.
func (l *Log) EndOffset(topic string, id int32) (int64, error) {
	p, err := l.partition(topic, id, false)
	if err != nil {
		return 0, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.next, nil
}

// Partitions is the number of partitions the log holds.
func (l *Log) Partitions() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.parts)
}

// Bytes is the size of the records held by every partition: what their
// appends wrote, counted again at Open.
func (l *Log) Bytes() int64 {
	var n int64
	for _, p := range l.partitions() {
		p.mu.Lock()
		for _, s := range p.segments {
			n += s.size
		}
		p.mu.Unlock()
	}
	return n
}

// partitions is a snapshot of the open partitions, so that flushing them
// does not hold the map lock.
func (l *Log) partitions() []*partition {
	l.mu.RLock()
	defer l.mu.RUnlock()
	parts := make([]*partition, 0, len(l.parts))
	for _, p := range l.parts {
		parts = append(parts, p)
	}
	return parts
}

// Flush forces every partition's active segment to disk.
func (l *Log) Flush() error {
	parts := l.partitions()
	for _, p := range parts {
		if err := p.flush(); err != nil {
			return err
		}
	}
	return l.takeBackgroundErr()
}

// flusher is the log flusher thread: one pass over all partitions per tick,
// fsyncing those written since their last flush, one after another.
func (l *Log) flusher() {
	defer l.wg.Done()
	t := time.NewTicker(l.opts.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		parts := l.partitions()
		for _, p := range parts {
			if seg := p.takeDirty(); seg != nil {
				if err := seg.flush(); err != nil {
					l.setBackgroundErr(err)
				}
			}
		}
	}
}

// background runs fn (a roll-time flush) on its own goroutine; Close waits for it.
func (l *Log) background(fn func() error) {
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		if err := fn(); err != nil {
			l.setBackgroundErr(err)
		}
	}()
}

func (l *Log) setBackgroundErr(err error) {
	l.bgMu.Lock()
	defer l.bgMu.Unlock()
	if l.bgErr == nil {
		l.bgErr = err
	}
}

func (l *Log) takeBackgroundErr() error {
	l.bgMu.Lock()
	defer l.bgMu.Unlock()
	return l.bgErr
}

// Close stops the flusher, then flushes, trims and closes every partition.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.closed = true
	l.mu.Unlock()
	close(l.stop)
	l.wg.Wait()
	return errors.Join(l.closeParts(), l.takeBackgroundErr())
}

func (l *Log) closeParts() error {
	var errs []error
	for _, p := range l.parts {
		errs = append(errs, p.close())
	}
	return errors.Join(errs...)
}
