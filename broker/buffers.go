package broker

import (
	"encoding/binary"
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/valyala/bytebufferpool"
)

// The memory of the request path comes from pools shared by all
// connections, not from each connection: a request frame and a response
// buffer are taken for one request and given back when it is answered.
// Request frames are kept by the broker's framePool (frames.go).
// bytebufferpool sizes the response buffers it keeps by the sizes it has
// seen and drops buffers far above them, so one 50 MiB fetch does not
// leave 50 MiB pinned to the connection that made it, while steady traffic
// reuses its buffers without allocating.
var responseBuffers bytebufferpool.Pool

// recycleFrame gives a handled frame back to the pool when no handler can
// still refer to it. Decoded requests alias their frame (kmsg keeps byte
// fields as sub-slices) and some handlers keep such fields after answering
// (group member metadata and assignments), so only the APIs known to copy
// what they keep are recycled: Produce copies the batch into the log
// before it returns and Fetch keeps only topic names, which decoding
// copies. Other frames are left to the garbage collector.
func (b *Broker) recycleFrame(f *bytebufferpool.ByteBuffer, raw bool) {
	if !raw && recycled(f.B) {
		b.frames.put(f)
	}
}

// recycled reports whether a frame that begins with head (at least its
// API key) goes back to the pool once handled.
func recycled(head []byte) bool {
	if len(head) < 2 {
		return false
	}
	switch kmsg.Key(binary.BigEndian.Uint16(head)) {
	case kmsg.Produce, kmsg.Fetch:
		return true
	}
	return false
}

// write writes the encoded response: out, or the vector of a Fetch
// response written from the log (fetch_write.go). It returns the bytes
// written.
func (c *conn) write(out []byte) (int64, error) {
	if len(c.vec) == 0 {
		n, err := c.nc.Write(out)
		return int64(n), err
	}
	if tcp, ok := c.nc.(*net.TCPConn); ok && c.fetch.sendfiles() {
		return c.writeSendfile(tcp, out)
	}
	// WriteTo consumes the slice it is called on; c.vec keeps the
	// backing array for the next response.
	vec := c.vec
	return vec.WriteTo(c.nc)
}

// releaseResponse gives the written response buffer back and releases
// the log views a Fetch response was written from.
func (c *conn) releaseResponse() {
	if c.out != nil {
		responseBuffers.Put(c.out)
		c.out = nil
	}
	c.fetch.reset()
	c.fetch.releaseScratch()
	clear(c.vec)
	c.vec = c.vec[:0]
}
