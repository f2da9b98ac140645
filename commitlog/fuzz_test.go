package commitlog

import (
	"bytes"
	"testing"
)

// FuzzDecode: Decode never panics, and whatever it accepts re-encodes to
// the same bytes.
func FuzzDecode(f *testing.F) {
	for _, m := range []Message{
		{},
		{Topic: "t", TopicID: TopicID{0: 0x5A, 15: 0xA5}, Key: []byte("k"), Headers: []Header{{"h", []byte("v")}, {"n", nil}}, Body: []byte("body")},
		{Topic: "t", Key: []byte{}, Count: 9, Flags: FlagStampOffset, Body: []byte("0123456789")},
	} {
		f.Add(Encode(nil, &m, 4096, 7, 1700000000000))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Decode(b)
		if err != nil {
			return
		}
		if int(r.TotalSize) > len(b) || r.Count < 1 {
			t.Fatalf("accepted size %d of %d bytes, count %d", r.TotalSize, len(b), r.Count)
		}
		if r.Flags&FlagStampOffset != 0 && (len(r.Body) < 8 || int64(be.Uint64(r.Body)) != r.QueueOffset) {
			return // a stamp Encode would write differently
		}
		if r.Version != Version {
			return // version 1 is read, never written
		}
		m := Message{Topic: r.Topic, TopicID: r.TopicID, Partition: r.Partition, Count: r.Count, Flags: r.Flags,
			ProducerTimestamp: r.ProducerTimestamp, Key: r.Key, Headers: r.Headers, Body: r.Body}
		again := Encode(nil, &m, r.PhysOffset, r.QueueOffset, r.StoreTimestamp)
		if !bytes.Equal(again, b[:r.TotalSize]) {
			t.Fatalf("re-encoding differs:\n% x\n% x", again, b[:r.TotalSize])
		}
	})
}

// FuzzRecover runs the recovery scanner over arbitrary bytes split into
// two files: it never panics, stays in bounds, and every record it accepts
// before the end decodes on its own at the place the scan found it.
func FuzzRecover(f *testing.F) {
	f.Add(make([]byte, 256))
	f.Fuzz(func(t *testing.T, data []byte) {
		half := int64(len(data) / 2)
		if half == 0 {
			return
		}
		segs := []*segment{
			{base: 0, size: half, ro: data[:half:half]},
			{base: half, size: half, ro: data[half : 2*half : 2*half]},
		}
		var seen []Position
		sc := scanner{fn: func(r *Record) error {
			seen = append(seen, r.Position())
			return nil
		}, intern: newInterner()}
		end, err := sc.scan(segs, 0)
		if err != nil {
			t.Fatalf("scan without a callback error: %v", err)
		}
		if end < 0 || end > 2*half {
			t.Fatalf("end %d outside [0, %d]", end, 2*half)
		}
		if int64(len(seen)) != sc.records {
			t.Fatalf("%d callbacks for %d records", len(seen), sc.records)
		}
		// Walk again independently, with Decode and the marker rule.
		i := 0
		for phys := int64(0); phys < end; {
			s := segs[0]
			if phys >= half {
				s = segs[1]
			}
			pos := phys - s.base
			if rem := s.size - pos; rem < BlankSize || isBlank(s.ro[pos:], rem) {
				phys = s.end()
				continue
			}
			r, err := Decode(s.ro[pos:])
			if err != nil {
				t.Fatalf("record at %d before the end %d does not decode: %v", phys, end, err)
			}
			if i >= len(seen) || seen[i] != r.Position() || r.PhysOffset != phys {
				t.Fatalf("record %d at %d: scan saw %v", i, phys, seen)
			}
			i++
			phys = r.End()
		}
		if i != len(seen) {
			t.Fatalf("scan reported %d records, %d before its end", len(seen), i)
		}
	})
}

// FuzzDecodeEpochs: the epoch-file parser never panics, and what it
// accepts is in order and encodes back to the same bytes.
func FuzzDecodeEpochs(f *testing.F) {
	f.Add(encodeEpochs(nil))
	f.Add(encodeEpochs([]EpochStart{{1, 0}, {4, 4096}, {9, 1 << 30}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := decodeEpochs(b)
		if err != nil {
			return
		}
		for i := 1; i < len(entries); i++ {
			if entries[i].Epoch <= entries[i-1].Epoch || entries[i].Start < entries[i-1].Start {
				t.Fatalf("accepted out-of-order entries %v", entries)
			}
		}
		if again := encodeEpochs(entries); !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs:\n% x\n% x", again, b)
		}
	})
}

// FuzzAppendRaw feeds a follower arbitrary replicated chunks: AppendRaw
// never panics, a rejected chunk leaves the log as it was, and an accepted
// one reads back record by record up to the new write offset.
func FuzzAppendRaw(f *testing.F) {
	var chunk []byte
	for i := 0; i < 3; i++ {
		m := Message{Topic: "t", Partition: int32(i), Body: []byte("body")}
		chunk = Encode(chunk, &m, int64(len(chunk)), 0, 1700000000000)
	}
	f.Add(chunk)
	f.Add(chunk[:len(chunk)-1])
	f.Fuzz(func(t *testing.T, data []byte) {
		l := openLog(t, testOptions(t, "", 8192))
		defer l.Close()
		end, err := l.AppendRaw(0, data)
		if err != nil {
			if l.WriteOffset() != 0 {
				t.Fatalf("rejected chunk moved the write offset to %d: %v", l.WriteOffset(), err)
			}
			return
		}
		if end != l.WriteOffset() {
			t.Fatalf("AppendRaw returned %d, write offset %d", end, l.WriteOffset())
		}
		for pos := int64(0); pos < end; {
			v, err := l.Read(pos)
			if err != nil {
				t.Fatalf("accepted chunk unreadable at %d: %v", pos, err)
			}
			pos = v.Next()
			v.Release()
		}
	})
}
