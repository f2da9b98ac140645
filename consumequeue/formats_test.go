package consumequeue

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/unilog/unilog/internal/framed"
	"github.com/unilog/unilog/internal/framed/framedtest"
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
