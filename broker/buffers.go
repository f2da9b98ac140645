package broker

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/valyala/bytebufferpool"
)

// The memory of the request path comes from pools shared by all
// connections, not from each connection: a request frame, a response
// buffer and a fetch's record arena (fetch.go) are taken for one request
// and given back when it is answered. bytebufferpool sizes what it keeps
// by the sizes it has seen and drops buffers far above them, so one 50 MiB
// fetch does not leave 50 MiB pinned to the connection that made it, while
// steady traffic reuses its buffers without allocating.
var (
	requestFrames   bytebufferpool.Pool
	responseBuffers bytebufferpool.Pool
)

// recycleFrame gives a handled frame back to the pool when no handler can
// still refer to it. Decoded requests alias their frame (kmsg keeps byte
// fields as sub-slices) and some handlers keep such fields after answering
// (group member metadata and assignments), so only the APIs known to copy
// what they keep are recycled: Produce copies the batch into the log
// before it returns and Fetch keeps only topic names, which decoding
// copies. Other frames are left to the garbage collector.
func recycleFrame(f *bytebufferpool.ByteBuffer, raw bool) {
	if raw || len(f.B) < 2 {
		return
	}
	switch kmsg.Key(binary.BigEndian.Uint16(f.B)) {
	case kmsg.Produce, kmsg.Fetch:
		requestFrames.Put(f)
	}
}

// releaseAfterEncode gives a fetch arena back once the response that
// refers to it is encoded.
func (c *conn) releaseAfterEncode(arena *bytebufferpool.ByteBuffer) {
	c.arenas = append(c.arenas, arena)
}

func (c *conn) releaseArenas() {
	for i, a := range c.arenas {
		fetchArenas.Put(a)
		c.arenas[i] = nil
	}
	c.arenas = c.arenas[:0]
}

// releaseResponse gives the written response buffer back.
func (c *conn) releaseResponse() {
	if c.out != nil {
		responseBuffers.Put(c.out)
		c.out = nil
	}
}
