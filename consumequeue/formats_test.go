package consumequeue

import (
	"testing"

	"github.com/unilog/unilog/internal/framed/framedtest"
)

// TestFormatsAsOlderBuildsWrote: a consume-queue file's header and the
// journal's header are written byte for byte as before the framed codec,
// and that build's bytes (testdata/formats) still read back.
func TestFormatsAsOlderBuildsWrote(t *testing.T) {
	want := header{Base: 600000, Start: 600005, EntriesPerFile: 300000}
	enc := make([]byte, HeaderSize)
	encodeHeader(enc, want)
	b := framedtest.Golden(t, "file-header", enc)
	if got, err := decodeHeader(b); err != nil || got != want {
		t.Errorf("file header: %+v, %v; want %+v", got, err, want)
	}

	wantJ := journalHeader{Seq: 42, Synced: 1 << 20}
	enc = make([]byte, JournalHeaderSize)
	encodeJournalHeader(enc, wantJ.Seq, wantJ.Synced)
	b = framedtest.Golden(t, "journal-header", enc)
	if got, err := decodeJournalHeader(b); err != nil || got != wantJ {
		t.Errorf("journal header: %+v, %v; want %+v", got, err, wantJ)
	}
}
