package commitlog

// Zeros ahead of the writer.
//
// The kernel gives a page-cache range the folio size of the write that
// first touches it, limited by the alignment of its start. The writer's
// batches are 17-70 KB at any offset, so almost every page of the log
// became a folio of its own, each allocated, charged, put on the LRU,
// written back and freed alone, and each write began and ended in a
// partial page. Measured with a C writer on the machine of
// docs/BENCHMARKS.md (4 GiB of 17,800-byte pwrites into a fallocated
// file, fdatasync every 100 ms, flushed pages dropped behind, cache.go),
// that cost 3.6-3.9 s of CPU; writing zeros over each aligned 256 KiB
// chunk just before the first record enters it, so that the chunk's
// folios are made by one aligned write, cost 1.5-2.3 s for the same
// records (64 KiB chunks 1.7-1.9 s, 1 MiB 2.9-3.1 s).
//
// The zeros are what the file holds there anyway (it is fallocated, and
// everything after the end of the log must read as zero for recovery),
// so a crash or power cut at any point leaves the same log. They are
// dirty, though: a flush that runs before the records fill the chunk
// writes its zeros to the disk too, and the records again after. With
// FlushAsync that is at most one chunk per flush interval; with
// FlushSync flushes run back to back behind every append, so almost every
// chunk would reach the disk twice, and the log does not zero ahead.

// zeroChunk is the aligned unit zeroed ahead of the writer.
const zeroChunk = 256 << 10

var zeroChunkBuf = make([]byte, zeroChunk)

// zeroAhead writes zeros from the end of what the writer has zeroed (or
// written) in s, or from pos, to the zeroChunk boundary at or after end,
// before the writer writes [pos, end) there; wmu held. Best effort: a
// failed write of zeros leaves the rest to the records' write, which
// reports the failure.
func (l *Log) zeroAhead(s *segment, pos, end int64) {
	if l.opts.FlushMode != FlushAsync {
		return
	}
	from := max(s.zeroed, pos)
	to := min((end+zeroChunk-1)/zeroChunk*zeroChunk, s.size)
	for from < to {
		n := min(to, (from/zeroChunk+1)*zeroChunk) - from
		if _, err := s.writeAt(zeroChunkBuf[:n], from); err != nil {
			return
		}
		from += n
		s.zeroed = from
	}
}
