package commitlog

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Large bodies are written from the caller's memory. Encoding a record
// into the writer's buffer copied its body once before pwrite copied it
// again into the page cache; profiled at one partition that first copy was
// 6% of the broker's CPU. A body of at least externalMin bytes is left out
// of the buffer: the buffer holds the record up to it (and its first 8
// bytes with FlagStampOffset, which the stamp changes) and the write is a
// pwritev of the buffer's runs and the bodies between them. Its CRC is
// computed over the caller's bytes (or derived, Message.BodyCRC), and the
// caller's bytes stay unchanged until AppendBatchTo returns, so what
// reaches the file is what Encode would have made.

// externalMin is the smallest body written from the caller's memory:
// below it the copy costs less than an iovec.
const externalMin = 4 << 10

// iovMax is Linux's IOV_MAX, the most iovecs one pwritev takes.
const iovMax = 1024

// extBody is a body written from the caller's memory: b goes after the
// first at bytes of the writer's buffer.
type extBody struct {
	at int
	b  []byte
}

// externalBody is how many bytes of m's body the writer leaves out of its
// buffer: the body past the offset stamp, or none for a short body.
func externalBody(m *Message) int {
	switch {
	case len(m.Body) < externalMin:
		return 0
	case m.Flags&FlagStampOffset != 0:
		return len(m.Body) - 8
	}
	return len(m.Body)
}

// vector cuts a batch (buf with exts inserted) into the iovecs of its
// files' parts, in order. A part ends between records, so in buf.
type vector struct {
	buf  []byte
	exts []extBody
	iov  [][]byte
	at   int // next byte of buf
}

// next returns the iovecs of the next n bytes of the batch, reusing the
// vector's array.
func (v *vector) next(n int) [][]byte {
	v.iov = v.iov[:0]
	for n > 0 {
		if len(v.exts) > 0 && v.exts[0].at == v.at {
			v.iov = append(v.iov, v.exts[0].b)
			n -= len(v.exts[0].b)
			v.exts = v.exts[1:]
			continue
		}
		stop := len(v.buf)
		if len(v.exts) > 0 {
			stop = v.exts[0].at
		}
		k := min(stop-v.at, n)
		if k <= 0 {
			break // n past the batch: writevAt's caller sees the short vector
		}
		v.iov = append(v.iov, v.buf[v.at:v.at+k])
		v.at += k
		n -= k
	}
	return v.iov
}

// writevAt writes the iovecs at pos with pwritev, as writeAt writes one
// buffer; iov is consumed.
func (s *segment) writevAt(iov [][]byte, pos int64) (int64, error) {
	var total int64
	for _, b := range iov {
		total += int64(len(b))
	}
	if pos+total > s.size {
		return 0, fmt.Errorf("commitlog: write %s [%d, %d): past the end of the file (%d): %w", s.path, pos, pos+total, s.size, ErrIO)
	}
	var written int64
	for len(iov) > 0 {
		piece, cut, whole := cutVector(iov[:min(len(iov), iovMax)], pieceLen(pos+written, total-written))
		n, err := unix.Pwritev(int(s.f.Fd()), piece, pos+written)
		iov[cut] = whole
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return written, s.writeError(pos+written, err)
		}
		written += int64(n)
		for n > 0 && len(iov) > 0 {
			k := min(n, len(iov[0]))
			iov[0] = iov[0][k:]
			n -= k
			if len(iov[0]) == 0 {
				iov = iov[1:]
			}
		}
	}
	return written, nil
}
