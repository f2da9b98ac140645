package consumequeue

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// promoter gives small queues their files on a goroutine of its own, so
// that the appender (the dispatcher, whose pace every acks=-1 produce
// waits on) never waits for a mkdir, a file creation or an fallocate: at
// 1,000 partitions under --flush sync those were 22% of the broker's CPU,
// on the dispatching goroutine. A queue past its promotion point goes on
// appending to the journal until the promoter has made its files; see
// "Small queues" in the package doc.
type promoter struct {
	s *Store

	mu      sync.Mutex
	waiting []*Queue
	busy    bool // a promotion taken from waiting is under way
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}

	// runMu is held for each promotion, and by DeleteTopic, Reset and
	// Close around what they change, so that no promotion creates files
	// in a directory being deleted or reset. Taken before Store.mu and
	// Queue.mu.
	runMu sync.Mutex
}

func newPromoter(s *Store) *promoter {
	p := &promoter{s: s, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go p.run()
	return p
}

// request queues q for promotion unless it is already queued or under way.
func (p *promoter) request(q *Queue) {
	if !q.promoting.CompareAndSwap(false, true) {
		return
	}
	p.mu.Lock()
	p.waiting = append(p.waiting, q)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *promoter) run() {
	defer close(p.done)
	for {
		select {
		case <-p.stop:
			return
		case <-p.wake:
		}
		for {
			p.mu.Lock()
			if len(p.waiting) == 0 {
				p.mu.Unlock()
				break
			}
			q := p.waiting[0]
			p.waiting[0] = nil
			p.waiting = p.waiting[1:]
			p.busy = true
			p.mu.Unlock()

			p.runMu.Lock()
			err := q.promoteBackground()
			p.runMu.Unlock()
			q.promoting.Store(false)
			if err != nil {
				// The queue stays in the journal, whole; its next append
				// asks again.
				p.s.log.WithError(err).WithField("queue", q.dir()).Warn("consume queue promotion failed; the queue stays in the journal")
			}
			p.mu.Lock()
			p.busy = false
			p.mu.Unlock()
			select {
			case <-p.stop:
				return
			default:
			}
		}
	}
}

// close stops the goroutine after the promotion under way; queues still
// waiting stay in the journal, which holds them whole.
func (p *promoter) close() {
	close(p.stop)
	<-p.done
}

// prepared is a queue's files, made and filled from a snapshot of its
// small entries without holding the queue's lock.
type prepared struct {
	files []*file
	cuts  uint64 // the small queue's cuts when the snapshot was taken
	start int64  // the first entry's offset
	next  int64  // one past the last entry written
}

// promoteBackground promotes q from the promoter's goroutine: the file
// system work (mkdir, file creation, the entries written into the new
// mapping) happens without q.mu, so appends to q go on into the journal
// meanwhile; then, under q.mu, the entries appended since are added and
// the queue switches to its files. A truncation or retention cut of the
// small queue in between makes the prepared file stale: it is removed and
// the queue asks again at its next append.
func (q *Queue) promoteBackground() error {
	if q.closed.Load() || !q.small.Load() {
		return nil
	}
	pr, err := q.prepare()
	if err != nil || pr == nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed.Load() || !q.small.Load() || q.sq.cutCount() != pr.cuts {
		return q.discard(pr)
	}
	return q.switchToFiles(pr)
}

// promote moves the queue's entries from the journal into files of its
// own at once (Reset); caller holds the promoter's runMu and q.mu.
func (q *Queue) promote() error {
	pr, err := q.prepare()
	if err != nil {
		return err
	}
	return q.switchToFiles(pr)
}

// prepare creates the queue's directory and files and writes the entries
// of a snapshot into them. For a queue holding no entry it makes only the
// directory and returns nil (the next append starts the files). The files
// are no reader's yet, so none of this needs q.mu.
func (q *Queue) prepare() (*prepared, error) {
	cuts := q.sq.cutCount()
	ents := q.sq.snapshot()
	fresh, err := q.s.mkdir(q.dir())
	if err != nil {
		return nil, err
	}
	if !fresh {
		// Left behind by a topic deletion that failed halfway, or by a
		// promotion that was discarded.
		if err := os.RemoveAll(q.dir()); err != nil {
			return nil, fmt.Errorf("consumequeue: promote %s/%d: %w", q.id.Topic, q.id.Partition, err)
		}
		if _, err := q.s.mkdir(q.dir()); err != nil {
			return nil, err
		}
	}
	if len(ents) == 0 {
		return nil, nil
	}
	pr := &prepared{cuts: cuts, start: ents[0].Offset}
	for _, fe := range ents {
		base := fe.Offset - fe.Offset%q.epf
		if n := len(pr.files); n == 0 || pr.files[n-1].base != base {
			f, err := q.createFile(base, fe.Offset)
			if err != nil {
				return nil, errors.Join(err, q.removeFiles(pr.files))
			}
			pr.files = append(pr.files, f)
		}
		if err := pr.files[len(pr.files)-1].put(int(fe.Offset-base), fe.Offset, fe.Entry); err != nil {
			return nil, errors.Join(fmt.Errorf("consumequeue: promote %s/%d: %w", q.id.Topic, q.id.Partition, err), q.removeFiles(pr.files))
		}
	}
	pr.next = ents[len(ents)-1].Offset + 1
	return pr, nil
}

// switchToFiles adds to the prepared files the entries appended since
// their snapshot, through the appends a file queue makes (so the files are
// exactly what a queue that always had them would hold), and only then
// lets readers go to the files. The journal records the promotion only
// after a Flush has made the files durable; until then a crash brings the
// queue back small (Open removes the unconfirmed directory). Caller holds
// q.mu.
func (q *Queue) switchToFiles(pr *prepared) error {
	if pr != nil {
		lo, _ := q.sq.bounds()
		if lo != pr.start {
			return q.discard(pr)
		}
		q.setFiles(pr.files)
	}
	for _, fe := range q.sq.snapshot() {
		if pr != nil && fe.Offset < pr.next {
			continue
		}
		if _, err := q.appendFile(fe.Offset, 1, fe.Entry, false); err != nil {
			fs := q.snapshot()
			q.setFiles(nil)
			return errors.Join(fmt.Errorf("consumequeue: promote %s/%d: %w", q.id.Topic, q.id.Partition, err), q.removeFiles(fs))
		}
	}
	q.small.Store(false)
	q.s.journal.promoted(q.sq)
	return nil
}

// discard removes prepared files that no longer match the queue (or whose
// queue was deleted), with their directory. Caller holds q.mu.
func (q *Queue) discard(pr *prepared) error {
	err := q.removeFiles(pr.files)
	if rerr := os.Remove(q.dir()); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		err = errors.Join(err, fmt.Errorf("consumequeue: remove %s: %w", q.dir(), rerr))
	}
	q.s.dirChanged(filepath.Dir(q.dir()))
	return err
}
