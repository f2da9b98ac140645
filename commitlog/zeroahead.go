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
// records (64 KiB chunks 1.7-1.9 s, 1 MiB 2.9-3.1 s). A write that
// covers chunks whole makes their folios itself, from an aligned start:
// only the last chunk a write enters and leaves part of gets zeros first
// (zeroSpan).
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

// zeroAhead writes zeros over the part of the last zeroChunk that the
// write of [pos, end) in s enters and does not cover (zeroSpan), before
// the writer writes it; wmu held. Best effort: a failed write of zeros
// leaves the rest to the records' write, which reports the failure.
func (l *Log) zeroAhead(s *segment, pos, end int64) {
	if l.opts.FlushMode != FlushAsync {
		return
	}
	from, to := zeroSpan(s.zeroed, pos, end, s.size)
	if from >= to {
		s.zeroed = max(s.zeroed, to)
		return
	}
	if _, err := s.writeAt(zeroChunkBuf[:to-from], from); err != nil {
		return
	}
	s.zeroed = to
}

// zeroSpan is the range zeroAhead zeros before a write of [pos, end)
// (end > pos) in a file of size bytes, zeroed (or written) up to zeroed:
// the last chunk the write enters, from where the write or the zeros
// before it reach, unless the write runs to the chunk's end. The chunks
// before it are zeroed already or covered whole by the write, which
// makes their folios itself from an aligned start. Zeroing them too
// copied every byte of the log into the page cache twice, and the first
// copy, into fresh pages, was the expensive one: 19% of the broker's
// samples (perf: copy_folio_from_iter_atomic under zeroAhead) against 2%
// for the records' own copy, with the 1 to 5 MB writes of a client
// writing to 10,000 partitions.
func zeroSpan(zeroed, pos, end, size int64) (from, to int64) {
	last := (end - 1) / zeroChunk * zeroChunk
	to = min(last+zeroChunk, size)
	if end >= to {
		return to, to
	}
	return max(zeroed, pos, last), to
}
