package bench

import (
	"fmt"
	"time"

	"github.com/unilog/unilog/commitlog"
)

// fetchBytes is the byte budget of one read, Kafka's default
// max.partition.fetch.bytes.
const fetchBytes = 1 << 20

// readBack reopens a closed layout from a cold page cache and reads one
// partition, then, from a cold cache again, every partition in order. This is
// where the unified log pays for its sequential writes: one partition's
// records are spread through the whole log, while Kafka's lie together.
// The read of all partitions stops after maxRun (0: no cap) and says so.
func readBack(cfg LayoutConfig, layout string, parts int, maxRun time.Duration) (*ReadResult, error) {
	rr := &ReadResult{Cold: true}
	cold := func() {
		if err := dropCaches(); err != nil {
			rr.Cold, rr.Note = false, err.Error()
		}
	}
	cold()
	start := time.Now()
	l, err := OpenLayout(layout, cfg)
	if err != nil {
		return rr, err
	}
	defer l.Close()
	rr.ReopenSeconds = time.Since(start).Seconds()

	start = time.Now()
	n, bytes, err := readAllOf(l, 0)
	if err != nil {
		return rr, atPartition(0, err)
	}
	rr.OneRecords, rr.OneSeconds = n, time.Since(start).Seconds()
	rr.OneMBPerS = float64(bytes) / rr.OneSeconds / 1e6

	cold()
	start = time.Now()
	var total int64
	for p := range parts {
		if maxRun > 0 && time.Since(start) > maxRun {
			rr.Note = joinNote(rr.Note, fmt.Sprintf("read of all partitions stopped at the %v time limit after %s of %s partitions", maxRun, commas(int64(p)), commas(int64(parts))))
			break
		}
		n, bytes, err := readAllOf(l, int32(p))
		if err != nil {
			return rr, atPartition(p, err)
		}
		rr.AllRecords += n
		total += bytes
	}
	rr.AllSeconds = time.Since(start).Seconds()
	rr.AllMBPerS = float64(total) / rr.AllSeconds / 1e6
	return rr, nil
}

// readAllOf reads a partition from offset 0 to its end in fetches and returns
// the records and payload bytes read.
func readAllOf(l Layout, p int32) (records, bytes int64, err error) {
	end, err := l.EndOffset(p)
	if err != nil {
		return 0, 0, err
	}
	for off := int64(0); off < end; {
		next, err := l.Read(p, off, fetchBytes, func(r *commitlog.Record) error {
			records++
			bytes += int64(len(r.Body))
			return nil
		})
		if err != nil {
			return records, bytes, err
		}
		if next == off {
			break
		}
		off = next
	}
	return records, bytes, nil
}
