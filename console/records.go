package console

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"unicode/utf8"
)

// Formats a record's key and value are shown in. Auto picks JSON when the
// bytes parse as JSON, text when they are UTF-8, else hex.
const (
	FormatAuto = "auto"
	FormatText = "text"
	FormatJSON = "json"
	FormatHex  = "hex"
)

// maxShown caps the bytes of one key or value sent to the page; the rest
// is counted, not sent.
const maxShown = 16 << 10

// shownRecord is a Record decoded for the page.
type shownRecord struct {
	Offset    int64         `json:"offset"`
	Timestamp int64         `json:"timestamp_ms"`
	Key       *decoded      `json:"key"`
	Value     *decoded      `json:"value"`
	Headers   []shownHeader `json:"headers,omitempty"`
}

type shownHeader struct {
	Key   string   `json:"key"`
	Value *decoded `json:"value"`
}

// decoded is bytes as shown: the format used, the text, and the full size.
type decoded struct {
	Format string `json:"format"`
	Text   string `json:"text"`
	Size   int    `json:"size"`
	Cut    bool   `json:"cut,omitempty"`
}

func showRecord(r Record, format string) shownRecord {
	out := shownRecord{Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli(),
		Key: decode(r.Key, format), Value: decode(r.Value, format)}
	for _, h := range r.Headers {
		out.Headers = append(out.Headers, shownHeader{h.Key, decode(h.Value, format)})
	}
	return out
}

// decode shows b in format; a format b is not (JSON that does not parse,
// text that is not UTF-8) falls back to text, then hex. Nil stays nil
// (a null key is not an empty one).
func decode(b []byte, format string) *decoded {
	if b == nil {
		return nil
	}
	d := &decoded{Size: len(b)}
	if len(b) > maxShown {
		b, d.Cut = b[:maxShown], true
	}
	switch {
	case (format == FormatJSON || format == FormatAuto) && !d.Cut && json.Valid(b):
		var buf bytes.Buffer
		json.Indent(&buf, b, "", "  ") // cannot fail: b is valid JSON
		d.Format, d.Text = FormatJSON, buf.String()
	case format != FormatHex && utf8.Valid(b):
		d.Format, d.Text = FormatText, string(b)
	default:
		d.Format, d.Text = FormatHex, hex.Dump(b)
	}
	return d
}
