package broker

import (
	"context"
	"encoding/binary"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A connection answers its requests in order, and used to serve each
// whole before handling the next: an acks=-1 produce waited for its flush
// (or its indexing) before the next produce on the connection was even
// appended, so a client pipelining produces (franz-go sends up to 5 per
// broker) paid their waits one after the other. Under --flush sync a
// produce's queue stage was as long as its durable wait.
//
// Now a produce that has been appended leaves its wait to the connection
// (deferredProduce). If the next request has already been read and is a
// produce, it is validated and appended first, so that both share the
// next flush and dispatch pass, and only then is the earlier one waited
// for and answered. Responses still leave in request order: a deferred
// produce is answered before any other response is encoded, before a
// request that is not a produce is handled, as soon as no request is
// waiting, and before the connection closes.

// deferredProduce is an appended produce whose answer waits; at most one
// per connection, held in the connection itself (conn.deferSlot) so that
// deferring allocates nothing.
type deferredProduce struct {
	resp     *kmsg.ProduceResponse
	acks     int16
	end      int64     // the physical end to wait for
	deadline time.Time // the request's timeout
	corr     int32
	start    time.Time // for unilog_request_duration_seconds
	stages   stageClock
	// waiting: handed to the connection's waiter, whose answer (code)
	// is then read from conn.waited; done: that answer has been read.
	waiting, done bool
	code          int16
}

// wait waits for the produce's appends as its acks ask and returns the
// Kafka error code.
func (d *deferredProduce) wait(c *conn) int16 {
	ctx, cancel := context.WithDeadline(c.ctx, d.deadline)
	defer cancel()
	return c.b.waitProducedTimed(ctx, d.acks, d.end, &d.stages)
}

// waitAsync hands the wait to the connection's waiter goroutine, so that
// serve can take the next request meanwhile. The waiter is one goroutine
// per connection, started on the first deferred produce and ended with
// serve (stopWaiter), not one per produce: at tens of thousands of
// produces a second a goroutine and a channel each were garbage and
// scheduler work on the path of every acknowledgement.
func (d *deferredProduce) waitAsync(c *conn) {
	if c.waits == nil {
		c.waits, c.waited, c.waiterDone = make(chan *deferredProduce), make(chan struct{}, 1), make(chan struct{})
		go waiter(c, c.waits, c.waited, c.waiterDone)
	}
	d.waiting = true
	c.waits <- d
}

// waiter runs the waits handed to it one at a time; waited holds one
// token per finished wait and never blocks it, so that it ends when serve
// closes waits even if nobody read the last answer.
func waiter(c *conn, waits <-chan *deferredProduce, waited, done chan<- struct{}) {
	defer close(done)
	for d := range waits {
		d.code = d.wait(c)
		waited <- struct{}{}
	}
}

// stopWaiter ends the connection's waiter once serve no longer hands it
// waits, and returns when it has: a wait still running ends with the
// connection's context (cancelled first), and must not reach the broker
// after the connection is gone and Close may be tearing storage down.
func (c *conn) stopWaiter() {
	if c.waits != nil {
		close(c.waits)
		<-c.waiterDone
		c.waits = nil
	}
}

// deferProduce leaves the answer of an appended produce to the connection
// after answering the one deferred before; false on a connection that
// does not pipeline (one handled outside serve).
func (c *conn) deferProduce(resp *kmsg.ProduceResponse, acks int16, end int64, deadline time.Time) bool {
	if !c.pipelined {
		return false
	}
	c.finishDeferred()
	c.deferSlot = deferredProduce{resp: resp, acks: acks, end: end, deadline: deadline, corr: c.corr, start: c.reqStart, stages: c.stages}
	c.deferred = &c.deferSlot
	c.justDeferred = true
	return true
}

// finishDeferred waits for the deferred produce, if any, and writes its
// answer. A write error is kept for serve, which closes the connection.
func (c *conn) finishDeferred() {
	d := c.deferred
	if d == nil {
		return
	}
	c.deferred = nil
	if d.waiting && !d.done {
		<-c.waited
		d.done = true
	}
	code := d.code
	if !d.waiting {
		code = d.wait(c)
	}
	if code != 0 {
		failAppended(d.resp, code)
	}
	out := c.encode(d.corr, d.resp)
	d.stages.mark(stageEncode)
	c.b.metrics.observe(int16(kmsg.Produce), time.Since(d.start))
	if err := c.writeResponse(out); err != nil {
		if c.writeErr == nil {
			c.writeErr = err
		}
		return
	}
	d.stages.mark(stageWrite)
	c.releaseResponse()
}

// failAppended answers code for every partition of resp that was
// appended (the only ones still without an error) after its wait failed.
func failAppended(resp *kmsg.ProduceResponse, code int16) {
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			if rp := &resp.Topics[i].Partitions[j]; rp.ErrorCode == 0 {
				rp.ErrorCode, rp.BaseOffset = code, -1
			}
		}
	}
}

// nextFrame is the next request to handle. A deferred produce is answered
// first unless that request is a produce: one already read, or one that
// arrives while the deferred one waits.
func (c *conn) nextFrame(frames <-chan queuedFrame) (queuedFrame, bool) {
	if d := c.deferred; d != nil {
		var f queuedFrame
		var ok, got bool
		select {
		case f, ok = <-frames:
			got = true
		default:
			if !d.waiting {
				// Started once: an acks=0 produce handled meanwhile
				// leaves the same one deferred.
				d.waitAsync(c)
			}
			select {
			case f, ok = <-frames:
				got = true
			case <-c.waited:
				d.done = true
			}
		}
		if got {
			if !ok || c.auth.raw || !isProduceFrame(f.buf.B) {
				c.finishDeferred()
			}
			return f, ok
		}
		c.finishDeferred()
	}
	f, ok := <-frames
	return f, ok
}

func isProduceFrame(frame []byte) bool {
	return len(frame) >= 2 && int16(binary.BigEndian.Uint16(frame)) == int16(kmsg.Produce)
}

// writeResponse writes an encoded response under the write timeout.
func (c *conn) writeResponse(out []byte) error {
	if c.b.cfg.WriteTimeout > 0 {
		c.nc.SetWriteDeadline(time.Now().Add(c.b.cfg.WriteTimeout))
	}
	n, err := c.write(out)
	if err != nil {
		return err
	}
	c.b.metrics.bytesOut.Add(float64(n))
	return nil
}

func (c *conn) logWriteFailed(err error) {
	c.b.log.WithFields(logrus.Fields{"remote": c.remote, "error": err}).Info("connection closed: write failed")
}
