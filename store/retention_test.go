package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/internal/poll"
)

// TestRetentionWaitsForDispatch appends far past the size cap while the
// dispatcher is parked: retention must keep every file, every record must
// then be indexed and readable, and retention must proceed once it is.
func TestRetentionWaitsForDispatch(t *testing.T) {
	opts := testOptions(t.TempDir())
	opts.CommitLog.RetentionBytes = 2 * opts.CommitLog.FileSize
	opts.CommitLog.RetentionCheckInterval = 2 * time.Millisecond
	d := mustOpen(t, opts)
	defer d.Close()
	// A floor that holds nothing back reports each retention check.
	checks := make(chan struct{})
	defer d.log.AddRetentionFloor(func() int64 {
		select {
		case checks <- struct{}{}:
		default:
		}
		return math.MaxInt64
	})()

	// Park the dispatching goroutine; once let go it dispatches one record
	// at a time and checks each before the floor passes it.
	parked, cont, checked := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	var once sync.Once
	letGo := func() { once.Do(func() { close(cont) }) }
	defer letGo() // before d.Close on a failure, which waits for the goroutine
	var recs []appended
	go d.d.Do(context.Background(), "test", func() error {
		close(parked)
		<-cont
		checked <- func() error {
			for _, a := range recs {
				if err := d.d.DispatchTo(a.pos.PhysOffset + 1); err != nil {
					return err
				}
				// The floor is now a.pos.End(), inside a's file: records
				// are 1081 bytes, which never fill a 64 KiB file exactly.
				m := a.msg
				if err := readBack(d, m.Topic, m.Partition, a.pos.QueueOffset, a.pos.PhysOffset, contentHash(m.Key, m.Headers, m.Body)); err != nil {
					return err
				}
			}
			return nil
		}()
		return nil
	})
	<-parked

	for len(d.log.Files()) < 10 {
		i := len(recs)
		body := make([]byte, 1000)
		binary.BigEndian.PutUint64(body, uint64(i))
		m := commitlog.Message{Topic: "r", Partition: int32(i % 4), Body: body}
		p, err := d.log.Append(&m)
		if err != nil {
			t.Fatal(err)
		}
		if p.Size != 1081 {
			t.Fatalf("record of %d bytes; the check above needs 1081", p.Size)
		}
		recs = append(recs, appended{msg: m, pos: p})
	}
	// Let retention check several times over, each of them free to delete
	// what it must not: the floor is called at the start of a check, so
	// the fifth call means four whole checks ran since the last append.
	for range 5 {
		<-checks
	}
	if min, files := d.log.MinOffset(), len(d.log.Files()); min != 0 || files < 10 {
		t.Fatalf("retention ran ahead of the dispatcher: min offset %d, %d files", min, files)
	}

	letGo()
	if err := <-checked; err != nil {
		t.Fatal(err)
	}
	waitDispatched(t, d)
	cap := int(opts.CommitLog.RetentionBytes / opts.CommitLog.FileSize)
	poll.Until(t, "retention to proceed after dispatch", func() error {
		if n := len(d.log.Files()); n > cap {
			return fmt.Errorf("%d files, cap %d", n, cap)
		}
		return nil
	})
	min := d.log.MinOffset()
	kept := 0
	for _, a := range recs {
		if a.pos.PhysOffset < min {
			continue
		}
		kept++
		checkReadable(t, d, a)
	}
	if kept == 0 || kept == len(recs) {
		t.Fatalf("%d of %d records kept", kept, len(recs))
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := Verify(opts.Dir); err != nil {
		t.Fatal(fmt.Errorf("after retention: %w", err))
	}
}

// TestRetentionFloorOption: Options.RetentionFloor holds retention back
// beside the dispatched offset (the group coordinator keeps files holding
// live committed offsets with it); the lower floor wins.
func TestRetentionFloorOption(t *testing.T) {
	var floor atomic.Int64
	opts := testOptions(t.TempDir())
	opts.CommitLog.RetentionBytes = 2 * opts.CommitLog.FileSize
	opts.CommitLog.RetentionCheckInterval = 2 * time.Millisecond
	opts.RetentionFloor = floor.Load
	d := mustOpen(t, opts)
	defer d.Close()
	for len(d.log.Files()) < 10 {
		if _, err := d.log.Append(&commitlog.Message{Topic: "r", Body: make([]byte, 1000)}); err != nil {
			t.Fatal(err)
		}
	}
	waitDispatched(t, d)
	keep := d.log.Files()[4].Base
	floor.Store(keep + 1)
	poll.Until(t, "retention up to the floor", func() error {
		if min := d.log.MinOffset(); min < keep {
			return fmt.Errorf("min offset %d, the file holding the floor starts at %d", min, keep)
		}
		return nil
	})
	if min := d.log.MinOffset(); min != keep {
		t.Fatalf("retention passed the floor: min offset %d, the file holding the floor starts at %d", min, keep)
	}
	floor.Store(math.MaxInt64)
	poll.Until(t, "retention down to the size cap", func() error {
		if n := len(d.log.Files()); n > 2 {
			return fmt.Errorf("%d files, min offset %d", n, d.log.MinOffset())
		}
		return nil
	})
}
