package dispatcher

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/unilog/unilog/consumequeue"
	"github.com/unilog/unilog/internal/fileops"
)

// inspect decodes consume-queue files with consumequeue.DecodeFile, and the
// small queues with consumequeue.ReadJournal, rather than opening a
// consumequeue.Store, because opening repairs what it finds (removes
// damaged files, cuts a torn journal tail) and inspecting must change
// nothing.

// cqQueue is one partition's consume queue read from disk.
type cqQueue struct {
	ID      consumequeue.ID
	Files   []string
	Entries []consumequeue.FileEntry // in offset order
	Min     int64                    // first offset held (== Max when empty)
	Max     int64                    // one past the last offset held
	Damage  []string                 // problems found while reading
}

// journalQueues reads the small queues of the journal. A queue that also
// has a directory is one whose promotion no flush confirmed: the journal
// holds it, as consumequeue.Open decides.
func journalQueues(dir string) (map[consumequeue.ID]*cqQueue, error) {
	jqs, err := consumequeue.ReadJournal(dir)
	if err != nil {
		return nil, fmt.Errorf("dispatcher: inspect: %w", err)
	}
	out := make(map[consumequeue.ID]*cqQueue, len(jqs))
	for _, jq := range jqs {
		out[jq.ID] = &cqQueue{ID: jq.ID, Entries: jq.Entries, Min: jq.Min, Max: jq.Max}
	}
	return out, nil
}

// readQueue reads every file of one queue. Damage is reported in Damage,
// not as an error, so one bad file does not hide the rest.
func readQueue(dir string, id consumequeue.ID) (*cqQueue, error) {
	qdir := consumequeue.QueueDir(dir, id)
	bases, err := consumequeue.ListFiles(qdir)
	if err != nil {
		return nil, fmt.Errorf("dispatcher: inspect: %w", err)
	}
	q := &cqQueue{ID: id, Min: -1}
	next := int64(-1)
	for _, base := range bases {
		name := fileops.OffsetName(base)
		q.Files = append(q.Files, name)
		b, err := os.ReadFile(filepath.Join(qdir, name))
		if err != nil {
			return nil, fmt.Errorf("dispatcher: inspect: %w", err)
		}
		entries, err := consumequeue.DecodeFile(b, base)
		if err != nil {
			q.Damage = append(q.Damage, fmt.Sprintf("file %s: %v", name, err))
		}
		for _, en := range entries {
			if next >= 0 && en.Offset != next {
				q.Damage = append(q.Damage, fmt.Sprintf("file %s: offset %d follows %d", name, en.Offset, next-1))
			}
			if q.Min < 0 {
				q.Min = en.Offset
			}
			next = en.Offset + 1
			q.Entries = append(q.Entries, en)
		}
	}
	if q.Min < 0 {
		q.Min, q.Max = 0, 0
	} else {
		q.Max = next
	}
	return q, nil
}
