package commitlog

import "sort"

// Touch loads the first byte of the record at each physical offset in
// phys, ignoring any the log does not hold, so that a reader about to read
// records scattered through the log (a fetch reading one partition's
// batches among those of 10,000 others: one every few megabytes) takes
// their cache and TLB misses together, overlapped by the CPU, instead of
// one per Read. It only warms: what it loads is discarded, a fault (a
// media error) is left for the Read that follows to report.
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
			sum += s.ro[p-s.base]
		}
	})
}

// discard keeps Touch's loads: a load whose value is never used is
// dropped by the compiler.
//
//go:noinline
func discard(byte) {}
