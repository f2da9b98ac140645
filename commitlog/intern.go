package commitlog

import "sync"

// maxInterned bounds the table so that a log with an unbounded number of
// distinct topics or header keys costs allocations, not memory.
const maxInterned = 1 << 14

// interner returns one shared string per distinct topic or header key so
// that decoding a record does not allocate. A nil *interner allocates.
type interner struct {
	mu sync.RWMutex
	m  map[string]string
}

func newInterner() *interner { return &interner{m: make(map[string]string)} }

func (in *interner) string(b []byte) string {
	if in == nil {
		return string(b)
	}
	in.mu.RLock()
	s, ok := in.m[string(b)]
	in.mu.RUnlock()
	if ok {
		return s
	}
	s = string(b)
	in.mu.Lock()
	if len(in.m) < maxInterned {
		in.m[s] = s
	}
	in.mu.Unlock()
	return s
}
