package consumequeue

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/unilog/unilog/internal/fileops"
)

// Tools that inspect a data directory read its queues here, with
// DecodeFile and ReadJournal, rather than opening a Store, because opening
// repairs what it finds (removes damaged files, cuts a torn journal tail)
// and inspecting must change nothing.

// QueueContents is one partition's consume queue read from disk.
type QueueContents struct {
	ID      ID
	Files   []string
	Entries []FileEntry // in offset order
	Min     int64       // first offset held (== Max when empty)
	Max     int64       // one past the last offset held
	Damage  []string    // problems found while reading
}

// ReadJournalQueues reads the small queues of the journal of the store
// rooted at dir. A queue that also has a directory is one whose promotion
// no flush confirmed: the journal holds it, as Open decides.
func ReadJournalQueues(dir string) (map[ID]*QueueContents, error) {
	jqs, err := ReadJournal(dir)
	if err != nil {
		return nil, err
	}
	out := make(map[ID]*QueueContents, len(jqs))
	for _, jq := range jqs {
		out[jq.ID] = &QueueContents{ID: jq.ID, Entries: jq.Entries, Min: jq.Min, Max: jq.Max}
	}
	return out, nil
}

// ReadQueue reads every file of queue id of the store rooted at dir.
// Damage is reported in Damage,
// not as an error, so one bad file does not hide the rest.
func ReadQueue(dir string, id ID) (*QueueContents, error) {
	qdir := QueueDir(dir, id)
	bases, err := ListFiles(qdir)
	if err != nil {
		return nil, fmt.Errorf("consumequeue: read %s: %w", dir, err)
	}
	q := &QueueContents{ID: id, Min: -1}
	next := int64(-1)
	for _, base := range bases {
		name := fileops.OffsetName(base)
		q.Files = append(q.Files, name)
		b, err := os.ReadFile(filepath.Join(qdir, name))
		if err != nil {
			return nil, fmt.Errorf("consumequeue: read %s: %w", dir, err)
		}
		entries, err := DecodeFile(b, base)
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
