package auth

import (
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// fileWatch holds what was last loaded from a file and loads it again
// once the file's modification time, size or inode changes (the inode
// catches a same-size replacement within one timestamp tick, which is how
// SaveUsers and most editors write), so an edit takes
// effect without a restart. A file that stops loading keeps the last good
// value rather than locking everyone out. every bounds how often the file
// is stat'ed: 0 checks on each call (a login), more keeps the stat off a
// per-request path (an authorization).
type fileWatch[T any] struct {
	path  string
	load  func(string) (*T, error)
	every time.Duration

	cur  atomic.Pointer[T]
	next atomic.Int64 // unix ns before which cur is served unchecked

	mu   sync.Mutex // one check at a time
	seen fileStamp
}

// fileStamp is what tells that a file changed.
type fileStamp struct {
	modTime int64 // unix ns
	size    int64
	ino     uint64
}

func stampOf(st os.FileInfo) fileStamp {
	s := fileStamp{modTime: st.ModTime().UnixNano(), size: st.Size()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		s.ino = sys.Ino
	}
	return s
}

// watchFile loads path, which must exist and load.
func watchFile[T any](path string, every time.Duration, load func(string) (*T, error)) (*fileWatch[T], error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	v, err := load(path)
	if err != nil {
		return nil, err
	}
	w := &fileWatch[T]{path: path, load: load, every: every, seen: stampOf(st)}
	w.cur.Store(v)
	return w, nil
}

// current returns the value of the file as it is now, telling onErr (when
// set) of a change that does not load.
func (w *fileWatch[T]) current(onErr func(error)) *T {
	if w.every > 0 && time.Now().UnixNano() < w.next.Load() {
		return w.cur.Load()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.every > 0 {
		// Callers that queued on mu while one of them checked wait for
		// the next period like the rest.
		now := time.Now()
		if now.UnixNano() < w.next.Load() {
			return w.cur.Load()
		}
		w.next.Store(now.Add(w.every).UnixNano())
	}
	st, err := os.Stat(w.path)
	if err != nil || stampOf(st) == w.seen {
		return w.cur.Load()
	}
	// A change is loaded (or reported) once: a broken file is not parsed
	// again until it changes once more.
	w.seen = stampOf(st)
	v, err := w.load(w.path)
	if err != nil {
		if onErr != nil {
			onErr(err)
		}
		return w.cur.Load()
	}
	w.cur.Store(v)
	return v
}
