package commitlog

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/unilog/unilog/internal/fileops"
	"github.com/unilog/unilog/internal/fileops/fileopstest"
)

// TestPowerCut cuts the power under a sync-mode log while writers append:
// a Recorder notes what every msync, fdatasync and directory fsync made
// durable, and the data directory is rebuilt from that alone (bytes never
// synced zero or garbage, names never synced absent), as a crash below the
// page cache leaves it; kill -9 keeps the page cache and could not tell a
// missing flush. Every record whose WaitDurable returned nil before the cut
// must come back after Recover.
func TestPowerCut(t *testing.T) {
	const (
		fileSize = 64 << 10
		writers  = 4
	)
	// A file holds 60 records: cut in the first, the third and the seventh.
	for _, tc := range []struct {
		acks    int64
		garbage bool
	}{{30, false}, {150, true}, {400, false}, {400, true}} {
		name := fmt.Sprintf("%d acks, zeros", tc.acks)
		if tc.garbage {
			name = fmt.Sprintf("%d acks, garbage", tc.acks)
		}
		t.Run(name, func(t *testing.T) {
			src := t.TempDir()
			rec := fileopstest.NewRecorder(fileops.OS{}, src)
			opts := testOptions(t, src, fileSize)
			opts.FlushMode = FlushSync
			opts.FS = rec
			l := openLog(t, opts)
			defer l.Close()

			type acked struct {
				pos Position
				msg Message
			}
			var (
				mu       sync.Mutex
				ackedSet []acked
				count    atomic.Int64
				enough   = make(chan struct{})
				once     sync.Once
				stop     = make(chan struct{})
				wg       sync.WaitGroup
			)
			for w := 0; w < writers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; ; i += writers {
						select {
						case <-stop:
							return
						default:
						}
						p, m, err := appendDurable(t, l, i)
						if err != nil {
							t.Error(err)
							return
						}
						if rec.Frozen() {
							continue // acknowledged after the cut
						}
						mu.Lock()
						ackedSet = append(ackedSet, acked{p, m})
						mu.Unlock()
						if count.Add(1) == tc.acks {
							once.Do(func() { close(enough) })
						}
					}
				}()
			}
			<-enough
			img := t.TempDir()
			if err := rec.Image(img, tc.garbage, uint64(tc.acks)); err != nil {
				t.Fatal(err)
			}
			close(stop)
			wg.Wait()
			mu.Lock()
			got := ackedSet
			mu.Unlock()

			iopts := testOptions(t, img, fileSize)
			cut, err := Open(iopts)
			if err != nil {
				t.Fatalf("open after the cut: %v", err)
			}
			defer cut.Close()
			var records int
			end, err := cut.Recover(0, func(*Record) error { records++; return nil })
			if err != nil {
				t.Fatalf("recover after the cut: %v", err)
			}
			t.Logf("%d acknowledged, %d records recovered up to %d (written %d)", len(got), records, end, l.WriteOffset())
			for _, a := range got {
				v, err := cut.Read(a.pos.PhysOffset)
				if err != nil {
					t.Fatalf("acknowledged record at %d lost in the cut: %v", a.pos.PhysOffset, err)
				}
				if d := sameMessage(v.Record(), &a.msg); d != "" {
					t.Fatalf("acknowledged record at %d: %s", a.pos.PhysOffset, d)
				}
				v.Release()
			}
		})
	}
}
