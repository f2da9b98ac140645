package commitlog

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/sirupsen/logrus"
)

func quietLogger() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

func testOptions(t testing.TB, dir string, fileSize int64) Options {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	return Options{Dir: dir, FileSize: fileSize, Logger: quietLogger(), RetentionAge: -1}
}

// openLog opens and recovers a log from its start, failing the test on error.
func openLog(t testing.TB, opts Options) *Log {
	t.Helper()
	l, err := Open(opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if _, err := l.Recover(0, nil); err != nil {
		l.Close()
		t.Fatalf("Recover: %v", err)
	}
	return l
}

// testMessage builds a deterministic message i of a body size.
func testMessage(i, bodySize int) Message {
	body := make([]byte, bodySize)
	for j := range body {
		body[j] = byte(i*31 + j)
	}
	return Message{
		Topic:             fmt.Sprintf("topic-%d", i%3),
		Partition:         int32(i % 2),
		ProducerTimestamp: int64(1000 + i),
		Key:               []byte(fmt.Sprintf("key-%d", i)),
		Headers:           []Header{{Key: "h", Value: []byte{byte(i)}}},
		Body:              body,
	}
}

// sameMessage reports how rec differs from m, or "" if it carries m.
func sameMessage(rec *Record, m *Message) string {
	count := m.Count
	if count == 0 {
		count = 1
	}
	switch {
	case rec.Topic != m.Topic:
		return fmt.Sprintf("topic %q, want %q", rec.Topic, m.Topic)
	case rec.TopicID != m.TopicID:
		return fmt.Sprintf("topic id %s, want %s", rec.TopicID, m.TopicID)
	case rec.Partition != m.Partition:
		return fmt.Sprintf("partition %d, want %d", rec.Partition, m.Partition)
	case rec.Count != count:
		return fmt.Sprintf("count %d, want %d", rec.Count, count)
	case rec.Flags != m.Flags:
		return fmt.Sprintf("flags %#x, want %#x", rec.Flags, m.Flags)
	case rec.ProducerTimestamp != m.ProducerTimestamp:
		return fmt.Sprintf("producer ts %d, want %d", rec.ProducerTimestamp, m.ProducerTimestamp)
	case (rec.Key == nil) != (m.Key == nil) || !bytes.Equal(rec.Key, m.Key):
		return fmt.Sprintf("key %q (nil %v), want %q (nil %v)", rec.Key, rec.Key == nil, m.Key, m.Key == nil)
	case len(rec.Headers) != len(m.Headers):
		return fmt.Sprintf("%d headers, want %d", len(rec.Headers), len(m.Headers))
	}
	for i := range m.Headers {
		h, w := rec.Headers[i], m.Headers[i]
		if h.Key != w.Key || (h.Value == nil) != (w.Value == nil) || !bytes.Equal(h.Value, w.Value) {
			return fmt.Sprintf("header %d = %q:%q, want %q:%q", i, h.Key, h.Value, w.Key, w.Value)
		}
	}
	body := rec.Body
	want := m.Body
	if m.Flags&FlagStampOffset != 0 {
		if !bytes.Equal(body[8:], want[8:]) || int64(be.Uint64(body)) != rec.QueueOffset {
			return "stamped body differs"
		}
		return ""
	}
	if !bytes.Equal(body, want) {
		return fmt.Sprintf("body of %d bytes differs from the %d wanted", len(body), len(want))
	}
	return ""
}
