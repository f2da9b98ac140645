package consumequeue

import (
	"encoding/binary"
	"fmt"

	"github.com/unilog/unilog/internal/framed"
	"github.com/unilog/unilog/internal/intern"
)

// JournalHeaderSize is the size of a journal file's header in bytes.
const JournalHeaderSize = 32

// journalFormat frames the fixed part of a journal's header, its first
// journalFrameSize bytes: a reserved uint16 and the sequence (uint64). The
// synced mark after it carries its own CRC, being rewritten alone. Version
// 1 journals hold the log's store time in their entry records and are
// still read, as version 1 queue files.
var journalFormat = framed.Format{Name: "journal header", Magic: "UCQJ", Version: 2, Oldest: 1, Shape: framed.Sealed}

const (
	journalFrameSize = 20

	// recordHeaderSize is a record's length and CRC before its body.
	recordHeaderSize = 8
	// maxRecordBody bounds a body: the largest is a declare with a
	// 255-byte topic. A larger length is damage, not a record to allocate.
	maxRecordBody = 512
)

// Record types; the numbers are part of the format.
const (
	recDeclare  byte = 1
	recEntry    byte = 2
	recTruncate byte = 3
	recSetMin   byte = 4
	recPromoted byte = 5
	recRemoved  byte = 6
)

const (
	declareBody = 1 + 4 + 4 + 8 // + topic
	entryBody   = 1 + 4 + 8 + 8 + 8 + 4
	offsetBody  = 1 + 4 + 8
	qidBody     = 1 + 4
	// maxTopic bounds a declare's topic, as validTopic does.
	maxTopic = 255

	// entryRecordSize is what one small-queue entry costs in the journal.
	entryRecordSize = recordHeaderSize + entryBody
)

// journalHeader is the decoded form of a journal file's header.
type journalHeader struct {
	Seq    uint64
	Synced int64 // bytes of the file durable when the mark was written; 0 if unknown
}

func encodeJournalHeader(b []byte, seq uint64, synced int64) {
	var p [10]byte
	binary.BigEndian.PutUint64(p[2:], seq)
	journalFormat.Append(b[:0:journalFrameSize], p[:])
	encodeSyncedMark(b[journalFrameSize:JournalHeaderSize], synced)
}

// encodeSyncedMark fills the 12 bytes at header offset 20: the mark is
// rewritten alone after every fsync, so it carries its own CRC.
func encodeSyncedMark(b []byte, synced int64) {
	binary.BigEndian.PutUint64(b[0:], uint64(synced))
	binary.BigEndian.PutUint32(b[8:], framed.Checksum(b[:8]))
}

// decodeJournalHeader checks the fixed part of a header. A mark that fails
// its CRC (a torn rewrite) reads as 0: nothing is known to be synced, and
// every bad record counts as a torn tail.
func decodeJournalHeader(b []byte) (journalHeader, error) {
	if len(b) < JournalHeaderSize {
		return journalHeader{}, fmt.Errorf("journal header: %d bytes, need %d: %w", len(b), JournalHeaderSize, ErrCorrupt)
	}
	_, p, err := journalFormat.Decode(b[:journalFrameSize])
	if err != nil {
		return journalHeader{}, fmt.Errorf("%w: %w", err, ErrCorrupt)
	}
	r := framed.NewReader(p)
	r.U16() // reserved, never checked: older builds did not either
	h := journalHeader{Seq: r.U64()}
	if binary.BigEndian.Uint32(b[28:]) == framed.Checksum(b[20:28]) {
		h.Synced = int64(binary.BigEndian.Uint64(b[20:]))
	}
	return h, nil
}

// The append* helpers write a record's body straight into b between
// beginRecord and endRecord. A body built in a buffer of its own would
// cost an allocation per record: the CRC's argument escapes (crc32 calls
// through a function value), and the dispatcher appends one entry record
// per produced batch.

// beginRecord appends a record header to be filled by endRecord, and
// returns where the record starts.
func beginRecord(b []byte) ([]byte, int) {
	return append(b, make([]byte, recordHeaderSize)...), len(b)
}

// endRecord writes the length and CRC of the record that starts at at and
// ends b.
func endRecord(b []byte, at int) []byte {
	body := b[at+recordHeaderSize:]
	binary.BigEndian.PutUint32(b[at:], uint32(len(body)))
	binary.BigEndian.PutUint32(b[at+4:], framed.Checksum(body))
	return b
}

func appendDeclare(b []byte, qid uint32, id ID, start int64) []byte {
	b, at := beginRecord(b)
	b = append(b, recDeclare)
	b = binary.BigEndian.AppendUint32(b, qid)
	b = binary.BigEndian.AppendUint32(b, uint32(id.Partition))
	b = binary.BigEndian.AppendUint64(b, uint64(start))
	b = append(b, id.Topic[:min(len(id.Topic), maxTopic)]...)
	return endRecord(b, at)
}

func appendEntry(b []byte, qid uint32, off int64, e Entry) []byte {
	b, at := beginRecord(b)
	b = append(b, recEntry)
	b = binary.BigEndian.AppendUint32(b, qid)
	b = binary.BigEndian.AppendUint64(b, uint64(off))
	b = binary.BigEndian.AppendUint64(b, uint64(e.PhysOffset))
	b = binary.BigEndian.AppendUint64(b, uint64(e.Timestamp))
	b = binary.BigEndian.AppendUint32(b, uint32(e.Size))
	return endRecord(b, at)
}

// appendOffset appends a truncate or set-min record.
func appendOffset(b []byte, typ byte, qid uint32, off int64) []byte {
	b, at := beginRecord(b)
	b = append(b, typ)
	b = binary.BigEndian.AppendUint32(b, qid)
	b = binary.BigEndian.AppendUint64(b, uint64(off))
	return endRecord(b, at)
}

// appendQID appends a promoted or removed record.
func appendQID(b []byte, typ byte, qid uint32) []byte {
	b, at := beginRecord(b)
	b = append(b, typ)
	b = binary.BigEndian.AppendUint32(b, qid)
	return endRecord(b, at)
}

// journalRecord is one decoded record; which fields mean something
// depends on Type.
type journalRecord struct {
	Type   byte
	QID    uint32
	ID     ID    // declare
	Offset int64 // declare (start), entry, truncate, set-min
	Entry  Entry // entry
}

// recordBody is the body of the record framed at the start of b, its CRC
// not checked; a frame too short, too long or past b is an error wrapping
// ErrCorrupt.
func recordBody(b []byte) ([]byte, error) {
	if len(b) < recordHeaderSize {
		return nil, fmt.Errorf("%d bytes left, short of a record header: %w", len(b), ErrCorrupt)
	}
	n := int(binary.BigEndian.Uint32(b[0:]))
	if n < qidBody || n > maxRecordBody {
		return nil, fmt.Errorf("record length %d: %w", n, ErrCorrupt)
	}
	if len(b) < recordHeaderSize+n {
		return nil, fmt.Errorf("record of %d bytes, %d left: %w", n, len(b)-recordHeaderSize, ErrCorrupt)
	}
	return b[recordHeaderSize : recordHeaderSize+n], nil
}

// countDeclares counts the declare records of the journal read through w
// by their frames alone (no CRC, so damage may miscount: the count only
// sizes replay's maps). Grown one doubling at a time, the maps of a
// million declared queues took 0.38 s of CPU in rehashes in a 5.8 s
// restart (`unilog broker --start-profile`, 1,000,000 partitions).
func countDeclares(w *window) (int, error) {
	n := 0
	for {
		body, err := recordBody(w.next())
		if err != nil {
			break
		}
		if body[0] == recDeclare {
			n++
		}
		w.skip(recordHeaderSize + len(body))
	}
	return n, w.err
}

// decodeRecord decodes the record at the start of b and returns its size.
// Anything short, over-long, failing its CRC or malformed is an error
// wrapping ErrCorrupt: zeros (an unwritten tail) fail the length check.
// A declare's topic is interned in topics: a string per declare was a
// million allocations, kept for the life of the queues, at 1,000,000
// queues.
func decodeRecord(b []byte, topics intern.Strings) (journalRecord, int, error) {
	body, err := recordBody(b)
	if err != nil {
		return journalRecord{}, 0, err
	}
	n := len(body)
	if got, want := binary.BigEndian.Uint32(b[4:]), framed.Checksum(body); got != want {
		return journalRecord{}, 0, fmt.Errorf("record crc %08x, computed %08x: %w", got, want, ErrCorrupt)
	}
	r := journalRecord{Type: body[0], QID: binary.BigEndian.Uint32(body[1:])}
	want := 0
	switch r.Type {
	case recDeclare:
		if n <= declareBody || n > declareBody+maxTopic {
			return journalRecord{}, 0, fmt.Errorf("declare record of %d bytes: %w", n, ErrCorrupt)
		}
		r.ID = ID{Topic: topics.Get(body[declareBody:]), Partition: int32(binary.BigEndian.Uint32(body[5:]))}
		r.Offset = int64(binary.BigEndian.Uint64(body[9:]))
		if !validTopic(r.ID.Topic) || r.ID.Partition < 0 || r.Offset < 0 {
			return journalRecord{}, 0, fmt.Errorf("declare record for %q/%d at %d: %w", r.ID.Topic, r.ID.Partition, r.Offset, ErrCorrupt)
		}
		want = n
	case recEntry:
		want = entryBody
		if n == want {
			r.Offset = int64(binary.BigEndian.Uint64(body[5:]))
			r.Entry = Entry{
				PhysOffset: int64(binary.BigEndian.Uint64(body[13:])),
				Timestamp:  int64(binary.BigEndian.Uint64(body[21:])),
				Size:       int32(binary.BigEndian.Uint32(body[29:])),
			}
			if r.Entry.Size <= 0 || r.Entry.PhysOffset < 0 {
				return journalRecord{}, 0, fmt.Errorf("entry record with size %d phys %d: %w", r.Entry.Size, r.Entry.PhysOffset, ErrCorrupt)
			}
		}
	case recTruncate, recSetMin:
		want = offsetBody
		if n == want {
			r.Offset = int64(binary.BigEndian.Uint64(body[5:]))
		}
	case recPromoted, recRemoved:
		want = qidBody
	default:
		return journalRecord{}, 0, fmt.Errorf("record type %d: %w", r.Type, ErrCorrupt)
	}
	if n != want {
		return journalRecord{}, 0, fmt.Errorf("record type %d of %d bytes, want %d: %w", r.Type, n, want, ErrCorrupt)
	}
	return r, recordHeaderSize + n, nil
}
