package dispatcher

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/unilog/unilog/consumequeue"
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

// listQueues finds every <dir>/<topic>/<partition> directory.
func listQueues(dir string) ([]consumequeue.ID, error) {
	topics, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("dispatcher: inspect: %w", err)
	}
	var ids []consumequeue.ID
	for _, t := range topics {
		if !t.IsDir() {
			continue
		}
		parts, err := os.ReadDir(filepath.Join(dir, t.Name()))
		if err != nil {
			return nil, fmt.Errorf("dispatcher: inspect: %w", err)
		}
		for _, p := range parts {
			n, err := strconv.ParseInt(p.Name(), 10, 32)
			if !p.IsDir() || err != nil || n < 0 {
				continue
			}
			ids = append(ids, consumequeue.ID{Topic: t.Name(), Partition: int32(n)})
		}
	}
	sort.Slice(ids, func(i, j int) bool {
		if ids[i].Topic != ids[j].Topic {
			return ids[i].Topic < ids[j].Topic
		}
		return ids[i].Partition < ids[j].Partition
	})
	return ids, nil
}

// readQueue reads every file of one queue. Damage is reported in Damage,
// not as an error, so one bad file does not hide the rest.
func readQueue(dir string, id consumequeue.ID) (*cqQueue, error) {
	qdir := filepath.Join(dir, id.Topic, strconv.Itoa(int(id.Partition)))
	ents, err := os.ReadDir(qdir)
	if err != nil {
		return nil, fmt.Errorf("dispatcher: inspect: %w", err)
	}
	q := &cqQueue{ID: id, Min: -1}
	for _, e := range ents {
		if e.IsDir() || len(e.Name()) != 20 {
			continue
		}
		if _, err := strconv.ParseInt(e.Name(), 10, 64); err != nil {
			continue
		}
		q.Files = append(q.Files, e.Name())
	}
	sort.Strings(q.Files)
	next := int64(-1)
	for _, name := range q.Files {
		b, err := os.ReadFile(filepath.Join(qdir, name))
		if err != nil {
			return nil, fmt.Errorf("dispatcher: inspect: %w", err)
		}
		base, _ := strconv.ParseInt(name, 10, 64)
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
