package commitlog

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/unilog/unilog/internal/framed"
	"github.com/unilog/unilog/internal/poll"
)

func TestRetention(t *testing.T) {
	const fileSize = 8192
	tests := []struct {
		name      string
		age       time.Duration
		bytes     int64
		later     time.Duration // how far in the future retention runs
		wantFiles int           // files left of the 6 written
	}{
		{"nothing due", 72 * time.Hour, 0, time.Hour, 6},
		{"all sealed files too old", 72 * time.Hour, 0, 73 * time.Hour, 1},
		{"age disabled", -1, 0, 1000 * time.Hour, 6},
		{"size cap", -1, 3 * fileSize, 0, 3},
		{"size cap below one file", -1, 1, 0, 1},
		{"size cap not reached", -1, 6 * fileSize, 0, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := testOptions(t, "", fileSize)
			opts.RetentionAge, opts.RetentionBytes = tt.age, tt.bytes
			l := openLog(t, opts)
			defer l.Close()
			var calls []int64
			l.OnRetention(func(newMin int64) { calls = append(calls, newMin) })
			for len(l.Files()) < 6 {
				m := testMessage(1, 1000)
				if _, err := l.Append(&m); err != nil {
					t.Fatal(err)
				}
			}
			files := l.Files()
			n := l.retain(time.Now().Add(tt.later))
			left := l.Files()
			if len(left) != tt.wantFiles || n != 6-tt.wantFiles {
				t.Fatalf("%d files left (%d deleted), want %d", len(left), n, tt.wantFiles)
			}
			if left[len(left)-1] != files[len(files)-1] {
				t.Fatal("the file being written was deleted")
			}
			if l.MinOffset() != left[0].Base {
				t.Fatalf("MinOffset %d, first file at %d", l.MinOffset(), left[0].Base)
			}
			for _, f := range files[:6-tt.wantFiles] {
				if _, err := os.Stat(f.Path); !os.IsNotExist(err) {
					t.Fatalf("%s still on disk: %v", f.Name, err)
				}
			}
			if n > 0 && (len(calls) != 1 || calls[0] != l.MinOffset()) {
				t.Fatalf("OnRetention calls %v, want [%d]", calls, l.MinOffset())
			}
			if n == 0 && len(calls) != 0 {
				t.Fatalf("OnRetention called without deletion: %v", calls)
			}
			if _, err := l.Read(files[0].Base); n > 0 && !errors.Is(err, ErrOutOfRange) {
				t.Fatalf("Read of a deleted file: %v, want ErrOutOfRange", err)
			}
			if got := scanAll(t, l); len(got) == 0 {
				t.Fatal("nothing readable after retention")
			}
		})
	}
}

func TestRetentionAgeSurvivesReopen(t *testing.T) {
	opts := testOptions(t, "", 8192)
	l := openLog(t, opts)
	for len(l.Files()) < 3 {
		m := testMessage(1, 1000)
		if _, err := l.Append(&m); err != nil {
			t.Fatal(err)
		}
	}
	files := l.Files()
	l.Close()
	old := time.Now().Add(-100 * time.Hour)
	if err := os.Chtimes(files[0].Path, old, old); err != nil {
		t.Fatal(err)
	}
	opts.RetentionAge = 72 * time.Hour
	l2 := openLog(t, opts)
	defer l2.Close()
	if n := l2.retain(time.Now()); n != 1 || l2.MinOffset() != files[1].Base {
		t.Fatalf("deleted %d files, min %d; want the one old file", n, l2.MinOffset())
	}
}

// TestReadersRaceRetention runs readers holding Views while the writer
// appends and retention deletes files under them; run it with -race. Each
// View's bytes must keep their CRC until released, whether or not its file
// was deleted meanwhile, and every file must be unmapped in the end.
// Retention runs after every append; most readers hold their View until
// the next deletion (an OnRetention hook), so views outlive their file.
func TestReadersRaceRetention(t *testing.T) {
	const fileSize = 16 << 10
	opts := testOptions(t, "", fileSize)
	opts.RetentionBytes = 3 * fileSize
	l := openLog(t, opts)

	var (
		mu      sync.Mutex
		written []Position
		done    = make(chan struct{})
		wg      sync.WaitGroup
		held    atomic.Int64 // views that outlived the deletion of their file
		delMu   sync.Mutex
		deleted = make(chan struct{}) // closed and replaced at every deletion
	)
	stop := sync.OnceFunc(func() { close(done); wg.Wait() })
	defer stop() // on a failure, before the log is closed under the goroutines
	stopped := func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
	nextDeletion := func() <-chan struct{} {
		delMu.Lock()
		defer delMu.Unlock()
		return deleted
	}
	l.OnRetention(func(int64) {
		delMu.Lock()
		close(deleted)
		deleted = make(chan struct{})
		delMu.Unlock()
	})
	wg.Add(1)
	go func() { // writer
		defer wg.Done()
		for i := 0; !stopped(); i++ {
			ms := []Message{testMessage(i, 200+i%500), testMessage(i+1, 50)}
			pos, err := l.AppendBatch(ms)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			written = append(written, pos...)
			mu.Unlock()
		}
	}()
	wg.Add(1)
	go func() { // retention
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case <-l.Appended():
			}
			l.retain(time.Now())
		}
	}()
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 1))
			for !stopped() {
				mu.Lock()
				if len(written) == 0 {
					mu.Unlock()
					continue
				}
				p := written[rng.IntN(len(written))]
				mu.Unlock()
				deletion := nextDeletion()
				v, err := l.Read(p.PhysOffset)
				if errors.Is(err, ErrOutOfRange) {
					continue // deleted before we got there
				}
				if err != nil {
					t.Errorf("Read %d: %v", p.PhysOffset, err)
					return
				}
				want := framed.Checksum(v.Bytes()[offPhys:])
				if rng.IntN(4) != 0 {
					select {
					case <-deletion:
					case <-done:
					}
				}
				if p.PhysOffset < l.MinOffset() {
					held.Add(1)
				}
				if got := framed.Checksum(v.Bytes()[offPhys:]); got != want || v.Record().PhysOffset != p.PhysOffset {
					t.Errorf("view at %d changed under the reader", p.PhysOffset)
				}
				v.Release()
			}
		}(uint64(r))
	}
	poll.Until(t, "views held across deletions", func() error {
		if n, min := held.Load(), l.MinOffset(); n < 20 || min < 40*fileSize {
			return fmt.Errorf("%d views outlived their file, min offset %d", n, min)
		}
		return nil
	})
	stop()
	t.Logf("min offset %d, %d views outlived their file", l.MinOffset(), held.Load())
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if m := l.MappedBytes(); m != 0 {
		t.Fatalf("%d bytes still mapped after Close with all views released", m)
	}
}

// TestRetentionFloor checks that retention, by size and by age, keeps every
// file that ends after the floor and proceeds as the floor moves.
func TestRetentionFloor(t *testing.T) {
	const fileSize = 8192
	for _, byAge := range []bool{false, true} {
		name := "size"
		if byAge {
			name = "age"
		}
		t.Run(name, func(t *testing.T) {
			opts := testOptions(t, "", fileSize)
			later := time.Duration(0)
			if byAge {
				opts.RetentionAge, later = time.Hour, 2*time.Hour
			} else {
				opts.RetentionBytes = 1
			}
			l := openLog(t, opts)
			defer l.Close()
			var floor atomic.Int64
			remove := l.AddRetentionFloor(floor.Load)
			for len(l.Files()) < 6 {
				m := testMessage(1, 1000)
				if _, err := l.Append(&m); err != nil {
					t.Fatal(err)
				}
			}
			files := l.Files()
			steps := []struct {
				floor     int64
				wantFiles int
			}{
				{0, 6},
				{files[0].Base + fileSize - 1, 6}, // the first file ends just after the floor
				{files[2].Base, 4},                // files 0 and 1 end at or before it
				{files[2].Base + 1, 4},
				{math.MaxInt64, 1}, // never the file being written
			}
			for _, st := range steps {
				floor.Store(st.floor)
				l.retain(time.Now().Add(later))
				left := l.Files()
				if len(left) != st.wantFiles {
					t.Fatalf("floor %d: %d files left, want %d", st.floor, len(left), st.wantFiles)
				}
				if left[0] != files[6-st.wantFiles] || l.MinOffset() != left[0].Base {
					t.Fatalf("floor %d: oldest file %s (min %d), want %s", st.floor, left[0].Name, l.MinOffset(), files[6-st.wantFiles].Name)
				}
				if _, err := l.Read(left[0].Base); err != nil {
					t.Fatalf("floor %d: oldest kept record unreadable: %v", st.floor, err)
				}
			}
			remove()
			if n := l.retain(time.Now().Add(later)); n != 0 {
				t.Fatalf("%d files deleted with one file left", n)
			}
		})
	}
}

// TestRetentionLiveStart: files ending at or before the oldest live
// record go at once, young as they are, but never past a floor nor the
// file being written.
func TestRetentionLiveStart(t *testing.T) {
	const fileSize = 8192
	opts := testOptions(t, "", fileSize)
	l := openLog(t, opts)
	defer l.Close()
	var live, floor atomic.Int64
	floor.Store(math.MaxInt64)
	l.AddRetentionFloor(floor.Load)
	for len(l.Files()) < 6 {
		m := testMessage(1, 1000)
		if _, err := l.Append(&m); err != nil {
			t.Fatal(err)
		}
	}
	files := l.Files()
	if n := l.retain(time.Now()); n != 0 {
		t.Fatalf("%d files deleted without a live start", n)
	}
	l.SetLiveStart(live.Load)
	for _, st := range []struct {
		live, floor int64
		wantFiles   int
	}{
		{0, math.MaxInt64, 6},
		{files[1].Base + 1, math.MaxInt64, 5}, // a record of file 1 is live
		{files[3].Base, files[2].Base, 4},     // the floor holds file 2
		{files[3].Base, math.MaxInt64, 3},
		{math.MaxInt64, math.MaxInt64, 1},
	} {
		live.Store(st.live)
		floor.Store(st.floor)
		l.retain(time.Now())
		left := l.Files()
		if len(left) != st.wantFiles || left[0] != files[6-st.wantFiles] {
			t.Fatalf("live %d floor %d: %d files left from %s, want %d", st.live, st.floor, len(left), left[0].Name, st.wantFiles)
		}
	}
}
