package broker

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"math/bits"
	"runtime"
	"runtime/debug"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/valyala/bytebufferpool"
)

func frameOf(n int) *bytebufferpool.ByteBuffer {
	return &bytebufferpool.ByteBuffer{B: make([]byte, 10, n)}
}

func caps(p *framePool) []int {
	var out []int
	for _, f := range p.free {
		out = append(out, cap(f.B))
	}
	return out
}

func TestFramePool(t *testing.T) {
	const limit = 8 << 20
	tests := []struct {
		name    string
		kept    []int // put in this order
		get     int   // request size
		back    bool  // the request's frame comes back to the pool
		gotCap  int   // 0: a new frame; -1: a small one from bytebufferpool
		keptNow []int // after the get
	}{
		{"empty", nil, 1 << 20, false, 0, nil},
		{"smallest that fits", []int{128 << 10, 1 << 20, 2 << 20}, 900 << 10, false, 1 << 20, []int{128 << 10, 2 << 20}},
		{"exact", []int{1 << 20}, 1 << 20, false, 1 << 20, nil},
		{"too small", []int{1 << 20}, 1<<20 + 1, false, 0, []int{1 << 20}},
		{"far too large for the request", []int{1 << 20}, 200 << 10, false, 0, []int{1 << 20}},
		{"far larger, for a request whose frame comes back", []int{128 << 10, 2 << 20}, 200 << 10, true, 2 << 20, []int{128 << 10}},
		{"within the slack", []int{256 << 10}, 65 << 10, false, 256 << 10, nil},
		{"a small request takes no kept frame", []int{128 << 10}, 100, false, -1, []int{128 << 10}},
		{"a small request whose frame comes back takes none either", []int{128 << 10}, 100, true, -1, []int{128 << 10}},
		{"a request of minKeptFrame is a small one", []int{128 << 10}, 64 << 10, true, -1, []int{128 << 10}},
		{"a small frame is not kept in the list", []int{64<<10 - 1}, 65 << 10, false, 0, nil},
		{"nor one of minKeptFrame", []int{64 << 10}, 65 << 10, false, 0, nil},
		{"a frame above a quarter of the limit is not kept", []int{limit/4 + 1}, limit / 4, false, 0, nil},
		{"room made by dropping smaller frames", []int{1 << 20, 1 << 20, 2 << 20, 2 << 20, 2 << 20, 2 << 20}, 3 << 20, false, 0, []int{2 << 20, 2 << 20, 2 << 20, 2 << 20}},
		{"no room: the larger kept", []int{2 << 20, 2 << 20, 2 << 20, 2 << 20, 1 << 20}, 3 << 20, false, 0, []int{2 << 20, 2 << 20, 2 << 20, 2 << 20}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newFramePool(limit)
			for _, c := range tt.kept {
				p.put(frameOf(c))
			}
			f := p.get(tt.get, tt.back)
			if len(f.B) != 0 {
				t.Errorf("got a frame of length %d, want 0", len(f.B))
			}
			switch {
			case tt.gotCap < 0:
				if cap(f.B) > minKeptFrame {
					t.Errorf("got a frame of cap %d for a small request, want one of at most %d", cap(f.B), minKeptFrame)
				}
			case cap(f.B) != tt.gotCap:
				t.Errorf("got a frame of cap %d, want %d", cap(f.B), tt.gotCap)
			}
			if got := caps(p); !slices.Equal(got, tt.keptNow) {
				t.Errorf("kept %v, want %v", got, tt.keptNow)
			}
			var held int64
			for _, c := range caps(p) {
				held += int64(c)
			}
			if held != p.held || held > limit {
				t.Errorf("held %d, counted %d, limit %d", p.held, held, limit)
			}
		})
	}
}

// TestFramePoolSurvivesGC is why the pool is not a sync.Pool: a produce
// frame recycled before two collections is there after them.
// TestFramePoolKeepsOnlyWhatItGives: requests of one size, each taking
// a frame, growing it as readFrameBody does and giving it back, leave at
// most one frame in the list: a frame is kept only where a request of its
// size looks. (Frames that 32-64 KiB requests grew to 64 KiB went to the
// list, where such requests never look, one more each request until the
// list held 64 MiB.)
func TestFramePoolKeepsOnlyWhatItGives(t *testing.T) {
	for _, n := range []int{40 << 10, 60 << 10, 64 << 10, 65 << 10, 100 << 10, 900 << 10} {
		p := newFramePool(64 << 20)
		for range 50 {
			f := p.get(n, true)
			growFrame(f, n, n)
			f.B = f.B[:n]
			p.put(f)
		}
		if n <= minKeptFrame && p.held != 0 || p.held > int64(2*n) {
			t.Errorf("%d-byte requests: the list holds %d bytes in %d frames after 50 of them", n, p.held, len(p.free))
		}
	}
}

func TestFramePoolSurvivesGC(t *testing.T) {
	p := newFramePool(64 << 20)
	f := frameOf(2 << 20)
	p.put(f)
	runtime.GC()
	runtime.GC()
	if got := p.get(2<<20, true); got != f {
		t.Fatalf("after two collections got a frame of cap %d, want the one kept", cap(got.B))
	}
}

// TestProduceFramesKept produces through a real connection with
// collections in between and checks that a produce request's frame is
// kept for the next ones.
func TestProduceFramesKept(t *testing.T) {
	br := startBroker(t, testConfig(t, t.TempDir()))
	cl := newClient(t, br.Addr())
	createTopic(t, cl, "frames", 1)
	value := make([]byte, 64<<10)
	rand.Read(value) // incompressible, whatever the client's codec
	for i := 0; i < 5; i++ {
		var rs []*kgo.Record
		for range 8 {
			rs = append(rs, &kgo.Record{Topic: "frames", Value: value})
		}
		if err := cl.ProduceSync(testCtx(t), rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		runtime.GC()
	}
	br.frames.mu.Lock()
	defer br.frames.mu.Unlock()
	if n := len(br.frames.free); n == 0 || cap(br.frames.free[n-1].B) < len(value) {
		t.Fatalf("kept frames of caps %v after five produces of 64 KiB records and ten collections", caps(br.frames))
	}
}

// TestSmallerProduceTakesKeptFrame sends a 900 KiB produce request and then
// one of 150 KiB through a real connection: the second takes the frame
// the first left, and no new frame is made and kept beside it.
func TestSmallerProduceTakesKeptFrame(t *testing.T) {
	br := startBroker(t, testConfig(t, t.TempDir()))
	cl := newClient(t, br.Addr())
	createTopic(t, cl, "frames", 1)
	produce := func(size int) {
		t.Helper()
		value := make([]byte, size)
		rand.Read(value)
		if r := rawProduce(t, cl, "frames", 0, rawBatch(-1, -1, -1, string(value))); r.ErrorCode != 0 {
			t.Fatalf("produce of %d bytes: error code %d", size, r.ErrorCode)
		}
	}
	kept := func() []*bytebufferpool.ByteBuffer {
		br.frames.mu.Lock()
		defer br.frames.mu.Unlock()
		return slices.Clone(br.frames.free)
	}
	produce(900 << 10)
	before := kept()
	if len(before) != 1 || cap(before[0].B) < 900<<10 {
		t.Fatalf("kept frames of caps %v after a 900 KiB produce, want one that held it", caps(br.frames))
	}
	produce(150 << 10)
	if after := kept(); len(after) != 1 || after[0] != before[0] {
		t.Fatalf("kept frames of caps %v after a 150 KiB produce, want the 900 KiB produce's frame alone (cap %d)", caps(br.frames), cap(before[0].B))
	}
}

// TestGrowFrame: a frame grows to the next power of two that holds what
// has arrived, so never past twice that, and keeps its bytes.
func TestGrowFrame(t *testing.T) {
	for _, tt := range []struct {
		name            string
		have, cap, k, n int
		wantCap         int
	}{
		{name: "room left", have: 10, cap: 100, k: 90, n: 1000, wantCap: 100},
		{name: "from nothing", have: 0, cap: 0, k: 17_345, n: 1_000_012, wantCap: 32 << 10},
		{name: "doubles", have: 32 << 10, cap: 32 << 10, k: 1, n: 1_000_012, wantCap: 64 << 10},
		{name: "last step of a request", have: 512 << 10, cap: 512 << 10, k: 1, n: 1_000_012, wantCap: 1 << 20},
		{name: "a request just past a class", have: 1 << 20, cap: 1 << 20, k: 1, n: 1<<20 + 100, wantCap: 2 << 20},
		{name: "odd capacity", have: 700_000, cap: 700_000, k: 50_000, n: 900_000, wantCap: 1 << 20},
		{name: "small", have: 3, cap: 3, k: 2, n: 9, wantCap: 8},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &bytebufferpool.ByteBuffer{B: make([]byte, tt.have, tt.cap)}
			for i := range f.B {
				f.B[i] = byte(i)
			}
			want := slices.Clone(f.B)
			growFrame(f, tt.k, tt.n)
			c := cap(f.B)
			if c != tt.wantCap {
				t.Errorf("cap %d, want %d", c, tt.wantCap)
			}
			if grown := c != tt.cap; grown && (bits.OnesCount(uint(c)) != 1 || c >= 2*(tt.have+tt.k)) {
				t.Errorf("grew to %d for %d bytes arrived: want a power of two below twice them", c, tt.have+tt.k)
			}
			if !bytes.Equal(f.B, want) {
				t.Error("the bytes the frame held changed")
			}
		})
	}
}

// TestProduceFramesOfOneClassShareAFrame sends a 900 KiB produce request
// and then one of 1000 KiB through a real connection: the second takes the
// frame the first left, where a frame grown to the first's size made the
// second grow one of its own.
func TestProduceFramesOfOneClassShareAFrame(t *testing.T) {
	br := startBroker(t, testConfig(t, t.TempDir()))
	cl := newClient(t, br.Addr())
	createTopic(t, cl, "frames", 1)
	kept := func() []*bytebufferpool.ByteBuffer {
		br.frames.mu.Lock()
		defer br.frames.mu.Unlock()
		return slices.Clone(br.frames.free)
	}
	var first []*bytebufferpool.ByteBuffer
	for _, size := range []int{900 << 10, 1000 << 10} {
		value := make([]byte, size)
		rand.Read(value)
		if r := rawProduce(t, cl, "frames", 0, rawBatch(-1, -1, -1, string(value))); r.ErrorCode != 0 {
			t.Fatalf("produce of %d bytes: error code %d", size, r.ErrorCode)
		}
		if first == nil {
			first = kept()
		}
	}
	if after := kept(); len(first) != 1 || len(after) != 1 || after[0] != first[0] {
		t.Fatalf("kept frames of caps %v after produces of 900 and 1000 KiB, want the first's frame alone", caps(br.frames))
	}
}

// BenchmarkGrowFrame grows a frame from nothing into heap given back to
// the kernel, as a fresh broker's frames are, and writes every page, as
// the request's bytes do: growFrame, whose call makes the pages, against
// the same allocation left to fault a page at a time. ns/page is what
// matters; the first is about half the second on the virtual machine of
// docs/BENCHMARKS.md.
func BenchmarkGrowFrame(b *testing.B) {
	const n = 1 << 20
	for _, made := range []bool{true, false} {
		b.Run(fmt.Sprintf("populate=%v", made), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				debug.FreeOSMemory()
				b.StartTimer()
				f := &bytebufferpool.ByteBuffer{}
				if made {
					growFrame(f, n, n)
				} else {
					f.B = make([]byte, 0, n)
				}
				f.B = f.B[:n]
				for i := 0; i < n; i += int(pageSize) {
					f.B[i] = 1
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n/int(pageSize)), "ns/page")
		})
	}
}
