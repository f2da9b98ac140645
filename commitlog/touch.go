package commitlog

import "sort"

// touchSpan is how much of a record Touch warms: what a Read decodes
// before the body, the fixed header (fixedSize, 70 bytes), a topic name
// of up to 16 bytes and the key, header count and body lengths. It spans
// two or three cache lines. Warming only the first (the record's first
// byte) left the decode a miss on the next: reading back 300,000 1 KiB
// records from 10,000 partitions, the broker's ticks over four read-backs
// were 152 (144-176) with the first line, 145 (139-148) with all of them,
// six runs each, interleaved; with every line of the body too, more than
// either (the copy to the socket takes those).
const touchSpan = 96

// cacheLine is the line size Touch steps by (x86-64's and most arm64's).
const cacheLine = 64

// Touch loads the lines of the first touchSpan bytes of the record at
// each physical offset in phys, ignoring any the log does not hold, so
// that a reader about to read records scattered through the log (a fetch
// reading one partition's batches among those of 10,000 others: one every
// few megabytes) takes their cache and TLB misses together, overlapped by
// the CPU, instead of one per Read. It only warms: what it loads is
// discarded, a fault (a media error) is left for the Read that follows to
// report.
func (l *Log) Touch(phys []int64) {
	if len(phys) == 0 || l.closed.Load() {
		return
	}
	w := l.writeOff.Load()
	segs := l.chain()
	var (
		s   *segment
		sum byte
	)
	defer func() {
		if s != nil {
			s.release()
		}
		discard(sum)
	}()
	guard(func() {
		for _, p := range phys {
			if p < 0 || p >= w {
				continue
			}
			if s == nil || p < s.base || p >= s.end() {
				if s != nil {
					s.release()
					s = nil
				}
				i := sort.Search(len(segs), func(i int) bool { return segs[i].end() > p })
				if i == len(segs) || p < segs[i].base || !segs[i].tryAcquire() {
					continue
				}
				s = segs[i]
			}
			o := p - s.base
			sum += s.ro[o]
			if last := o + touchSpan - 1; last < int64(len(s.ro)) {
				sum += s.ro[o+cacheLine] + s.ro[last]
			}
		}
	})
}

// discard keeps Touch's loads: a load whose value is never used is
// dropped by the compiler.
//
//go:noinline
func discard(byte) {}
