package consumequeue

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/unilog/unilog/internal/framed"
	"github.com/unilog/unilog/internal/framed/framedtest"
	"github.com/unilog/unilog/internal/intern"
)

// TestFormatsAsOlderBuildsWrote: a consume-queue file's header and the
// journal's header are written as version 1 was before the framed codec,
// but for the version (2: entries hold record timestamps), and that
// build's version 1 bytes (testdata/formats) still read back.
func TestFormatsAsOlderBuildsWrote(t *testing.T) {
	want := header{Base: 600000, Start: 600005, EntriesPerFile: 300000}
	enc := make([]byte, HeaderSize)
	encodeHeader(enc, want)
	b := framedtest.Golden(t, "file-header", asVersion1(enc, HeaderSize))
	if got, err := decodeHeader(b); err != nil || got != want {
		t.Errorf("file header: %+v, %v; want %+v", got, err, want)
	}

	wantJ := journalHeader{Seq: 42, Synced: 1 << 20}
	enc = make([]byte, JournalHeaderSize)
	encodeJournalHeader(enc, wantJ.Seq, wantJ.Synced)
	b = framedtest.Golden(t, "journal-header", asVersion1(enc, journalFrameSize))
	if got, err := decodeJournalHeader(b); err != nil || got != wantJ {
		t.Errorf("journal header: %+v, %v; want %+v", got, err, wantJ)
	}
}

// asVersion1 rewrites a version 2 header as version 1: the version field
// and the CRC closing the first frame bytes.
func asVersion1(b []byte, frame int) []byte {
	if v := binary.BigEndian.Uint16(b[4:]); v != 2 {
		panic(fmt.Sprintf("header of version %d", v))
	}
	b = bytes.Clone(b)
	binary.BigEndian.PutUint16(b[4:], 1)
	binary.BigEndian.PutUint32(b[frame-4:], framed.Checksum(b[:frame-4]))
	return b
}

// TestJournalRecordsAsOlderBuildsWrote: every journal record type is
// encoded byte for byte as the build before records were built in place
// wrote it (testdata/formats/journal-records), and decodes back.
func TestJournalRecordsAsOlderBuildsWrote(t *testing.T) {
	id := ID{Topic: "orders@0123456789abcdef0123456789abcdef", Partition: 9}
	e := Entry{PhysOffset: 1 << 40, Size: 1100, Timestamp: 1733300000000}
	var enc []byte
	enc = appendDeclare(enc, 7, id, 300)
	enc = appendEntry(enc, 7, 300, e)
	enc = appendOffset(enc, recTruncate, 7, 301)
	enc = appendOffset(enc, recSetMin, 7, 250)
	enc = appendQID(enc, recPromoted, 7)
	enc = appendQID(enc, recRemoved, 8)
	b := framedtest.Golden(t, "journal-records", enc)

	want := []journalRecord{
		{Type: recDeclare, QID: 7, ID: id, Offset: 300},
		{Type: recEntry, QID: 7, Offset: 300, Entry: e},
		{Type: recTruncate, QID: 7, Offset: 301},
		{Type: recSetMin, QID: 7, Offset: 250},
		{Type: recPromoted, QID: 7},
		{Type: recRemoved, QID: 8},
	}
	topics := intern.New()
	for i, w := range want {
		got, n, err := decodeRecord(b, topics)
		if err != nil || got != w {
			t.Fatalf("record %d: %+v, %v; want %+v", i, got, err, w)
		}
		b = b[n:]
	}
	if len(b) != 0 {
		t.Errorf("%d bytes after the last record", len(b))
	}
}
