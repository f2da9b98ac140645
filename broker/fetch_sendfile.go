package broker

import (
	"fmt"
	"io"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/unilog/unilog/store"
)

// Large batches of a Fetch response go to a plain TCP socket by
// sendfile(2) from the log file: the kernel hands the socket the page
// cache's pages instead of copying the bytes into socket buffers, which
// is the copy writev makes. Reading back one partition of 1 KiB records,
// that copy was 72% of the broker's CPU (docs/BENCHMARKS.md). Small
// batches, at thousands of partitions a few hundred bytes each, stay in
// the writev: a syscall each would cost more than the copy it saves.
// The response is corked meanwhile, so the head's pieces between the
// batches go out in full segments.
//
// A page the disk cannot return fails the sendfile with an error of the
// write (EIO), as a writev's fault is EFAULT: the connection is closed.

// sendfileMin is the smallest batch sent by sendfile. Each one also cuts
// the writev around it in two, so a batch must save more copy than two
// syscalls cost: reading back 100 partitions, 32 KiB took 15-28% less
// broker CPU than 64 KiB, while 16 KiB and less lost at 1,000 partitions
// (docs/BENCHMARKS.md).
const sendfileMin = 32 << 10

// sendfiles reports whether the response has a batch worth a sendfile.
func (r *fetchRecords) sendfiles() bool {
	for i := range r.views {
		if _, _, ok := bySendfile(&r.views[i]); ok {
			return true
		}
	}
	return false
}

// bySendfile returns the log file and offset of v's bytes if v is a batch
// to send by sendfile: large enough, and read through a log file.
func bySendfile(v *store.BatchView) (f *os.File, off int64, ok bool) {
	if len(v.Bytes) < sendfileMin {
		return nil, 0, false
	}
	return v.File()
}

// writeSendfile writes the Fetch response whose head is head (encodeFetch)
// to tcp: the head's pieces and small batches by writev, large batches by
// sendfile. It returns the bytes written.
func (c *conn) writeSendfile(tcp *net.TCPConn, head []byte) (int64, error) {
	rc, err := tcp.SyscallConn()
	if err != nil {
		return 0, err
	}
	if err := setCork(rc, true); err != nil {
		return 0, err
	}
	var (
		total int64
		vec   = c.vec[:0]
	)
	flush := func() error {
		if len(vec) == 0 {
			return nil
		}
		w := vec
		n, err := w.WriteTo(tcp)
		total += n
		clear(vec)
		vec = vec[:0]
		return err
	}
	at := 0
	err = func() error {
		for _, s := range c.fetch.splices {
			vec = append(vec, head[at:s.at])
			at = s.at
			for i := s.from; i < s.to; i++ {
				v := &c.fetch.views[i]
				f, off, ok := bySendfile(v)
				if !ok {
					vec = append(vec, v.Bytes)
					continue
				}
				if err := flush(); err != nil {
					return err
				}
				n, err := sendfile(rc, int(f.Fd()), off, len(v.Bytes))
				total += n
				if err != nil {
					return err
				}
			}
		}
		vec = append(vec, head[at:])
		return flush()
	}()
	c.vec = vec
	if cerr := setCork(rc, false); err == nil {
		err = cerr
	}
	return total, err
}

// sendfile sends n bytes of the file src from off to the socket of rc,
// waiting (within the connection's write deadline) while it is full.
func sendfile(rc syscall.RawConn, src int, off int64, n int) (int64, error) {
	var (
		sent int64
		serr error
	)
	err := rc.Write(func(fd uintptr) bool {
		for n > 0 {
			m, err := unix.Sendfile(int(fd), src, &off, n)
			if m > 0 {
				sent += int64(m)
				n -= m
			}
			switch {
			case err == unix.EAGAIN:
				return false
			case err == unix.EINTR:
			case err != nil:
				serr = fmt.Errorf("sendfile: %w", err)
				return true
			case m == 0:
				// The file ended before the batch: it was cut under the log.
				serr = fmt.Errorf("sendfile: %w", io.ErrUnexpectedEOF)
				return true
			}
		}
		return true
	})
	if serr != nil {
		return sent, serr
	}
	return sent, err
}

// setCork holds back partial segments while on, and sends what it held
// when turned off.
func setCork(rc syscall.RawConn, on bool) error {
	v := 0
	if on {
		v = 1
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_CORK, v) }); err != nil {
		return err
	}
	return serr
}
