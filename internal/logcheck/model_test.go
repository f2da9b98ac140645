package logcheck

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// op is one operation of a hand-written history: client, times, input,
// output.
type op struct {
	client    int
	call, ret int64
	in        Input
	out       Output
}

func appendOp(client int, call, ret int64, value string, offset int64) op {
	return op{client, call, ret, Input{Kind: Append, Key: "t/0", Value: value}, Output{Offset: offset, End: -1}}
}

func unknownAppend(client int, call int64, value string) op {
	return op{client, call, 0, Input{Kind: Append, Key: "t/0", Value: value}, Output{Unknown: true, End: -1}}
}

func readOp(client int, call, ret, from int64, end int64, values ...string) op {
	return op{client, call, ret, Input{Kind: Read, Key: "t/0", From: from}, Output{Values: values, End: end}}
}

func commitOp(client int, call, ret, offset int64, unknown bool) op {
	return op{client, call, ret, Input{Kind: Commit, Key: "g/t/0", Offset: offset}, Output{Unknown: unknown, End: -1}}
}

func fetchOp(client int, call, ret, offset int64) op {
	return op{client, call, ret, Input{Kind: FetchOffset, Key: "g/t/0"}, Output{Offset: offset, End: -1}}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  []op
		want error
	}{
		{"concurrent appends read in offset order", []op{
			appendOp(0, 0, 10, "a", 1),
			appendOp(1, 1, 9, "b", 0),
			readOp(2, 11, 12, 0, 2, "b", "a"),
		}, nil},
		{"read overlapping an append sees it", []op{
			appendOp(0, 0, 10, "a", 0),
			readOp(1, 5, 6, 0, -1, "a"),
		}, nil},
		{"append with unknown outcome later read", []op{
			unknownAppend(0, 0, "a"),
			appendOp(0, 1, 2, "b", 1),
			readOp(1, 3, 4, 0, 2, "a", "b"),
		}, nil},
		{"append with unknown outcome never stored", []op{
			unknownAppend(0, 0, "a"),
			appendOp(1, 1, 2, "b", 0),
			readOp(1, 3, 4, 0, 1, "b"),
		}, nil},
		{"a read of the tail only", []op{
			appendOp(0, 0, 1, "a", 0),
			appendOp(0, 2, 3, "b", 1),
			appendOp(0, 4, 5, "c", 2),
			readOp(1, 6, 7, 1, -1, "b"),
		}, nil},
		{"acknowledged without an offset", []op{
			appendOp(0, 0, 1, "a", -1),
			appendOp(1, 0, 3, "b", 1),
			readOp(2, 4, 5, 0, 2, "a", "b"),
		}, nil},
		{"acknowledged without an offset and lost", []op{
			appendOp(0, 0, 1, "a", -1),
			appendOp(1, 2, 3, "b", 0),
			readOp(2, 4, 5, 0, 1, "b"),
		}, ErrNotLinearizable},
		{"record served then lost", []op{
			unknownAppend(0, 0, "a"),
			readOp(1, 1, 2, 0, -1, "a"),
			appendOp(0, 3, 4, "b", 0),
			readOp(1, 5, 6, 0, 1, "b"),
		}, ErrNotLinearizable},
		{"acknowledged record missing at the end", []op{
			appendOp(0, 0, 1, "a", 0),
			appendOp(0, 2, 3, "b", 1),
			readOp(1, 4, 5, 0, 1, "a"),
		}, ErrNotLinearizable},
		{"record stored twice", []op{
			appendOp(0, 0, 1, "a", 0),
			readOp(1, 2, 3, 0, 2, "a", "a"),
		}, ErrNotLinearizable},
		{"two records acknowledged at one offset", []op{
			appendOp(0, 0, 1, "a", 0),
			appendOp(1, 2, 3, "b", 0),
		}, ErrNotLinearizable},
		{"read of a record before it was produced", []op{
			readOp(1, 0, 1, 0, -1, "a"),
			appendOp(0, 2, 3, "a", 0),
		}, ErrNotLinearizable},
		{"end seen shorter than an acknowledged append", []op{
			appendOp(0, 0, 1, "a", 0),
			readOp(1, 2, 3, 0, 0),
		}, ErrNotLinearizable},
		{"committed offset read back", []op{
			commitOp(0, 0, 1, 5, false),
			fetchOp(1, 2, 3, 5),
			commitOp(0, 4, 6, 7, false),
			fetchOp(1, 5, 6, 5),
			fetchOp(1, 7, 8, 7),
		}, nil},
		{"commit with unknown outcome seen or not", []op{
			commitOp(0, 0, 1, 5, false),
			commitOp(0, 2, 0, 7, true),
			fetchOp(1, 3, 4, 5),
			fetchOp(1, 5, 6, 7),
		}, nil},
		{"acknowledged commit lost", []op{
			commitOp(0, 0, 1, 5, false),
			commitOp(0, 2, 3, 7, false),
			fetchOp(1, 4, 5, 5),
		}, ErrNotLinearizable},
		{"nothing committed reads -1", []op{
			fetchOp(1, 0, 1, -1),
			commitOp(0, 2, 3, 1, false),
		}, nil},
		{"one client's overlapping appends stored out of order", []op{
			appendOp(0, 0, 10, "a", 1),
			appendOp(0, 1, 10, "b", 0),
			readOp(1, 11, 12, 0, 2, "b", "a"),
		}, ErrProducerOrder},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHistory()
			for _, o := range tc.ops {
				h.Record(o.client, o.in, o.out, o.call, o.ret)
			}
			viz := filepath.Join(t.TempDir(), "history.html")
			err := h.Check(10*time.Second, viz)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("Check: %v, want %v", err, tc.want)
			}
			if errors.Is(err, ErrNotLinearizable) && (!strings.Contains(err.Error(), viz) || !strings.Contains(err.Error(), "/t/0") && !strings.Contains(err.Error(), ": t/0")) {
				t.Errorf("error %q does not name the key and the visualization", err)
			}
		})
	}
}

// TestOpenOperationIsUnknown: an operation begun and never ended (the
// client died with it in flight) may or may not have taken effect.
func TestOpenOperationIsUnknown(t *testing.T) {
	for _, stored := range []bool{false, true} {
		h := NewHistory()
		h.Begin(0, Input{Kind: Append, Key: "t/0", Value: "a"})
		b := h.Begin(0, Input{Kind: Append, Key: "t/0", Value: "b"})
		r := h.Begin(1, Input{Kind: Read, Key: "t/0"})
		if stored {
			b.End(Output{Offset: 1, End: -1})
			r.End(Output{Values: []string{"a", "b"}, End: 2})
		} else {
			b.End(Output{Offset: 0, End: -1})
			r.End(Output{Values: []string{"b"}, End: 1})
		}
		if err := h.Check(10*time.Second, ""); err != nil {
			t.Errorf("stored=%v: %v", stored, err)
		}
		if s := h.Stats(); s.Appends != 2 || s.Acked != 1 || s.Reads != 1 {
			t.Errorf("stored=%v: stats %v", stored, s)
		}
	}
}

// TestLongHistory keeps the check fast on the size of history a failover
// test records: thousands of pipelined appends, reads and a final read.
func TestLongHistory(t *testing.T) {
	h := NewHistory()
	const n = 5000
	var all []string
	now := int64(0)
	for i := range n {
		v := fmt.Sprint("v", i)
		all = append(all, v)
		// 100 appends in flight at a time, acknowledged in order.
		h.Record(i%3, Input{Kind: Append, Key: "t/0", Value: v}, Output{Offset: int64(i), End: -1}, now, now+100)
		if i%50 == 49 {
			from := max(i-149, 0)
			h.Record(9, Input{Kind: Read, Key: "t/0", From: int64(from)}, Output{Values: all[from:max(i-99, from)], End: -1}, now, now+1)
		}
		now++
	}
	h.Record(9, Input{Kind: Read, Key: "t/0"}, Output{Values: all, End: n}, now+200, now+201)
	if err := h.Check(time.Minute, ""); err != nil {
		t.Fatal(err)
	}
}

// TestManyUnseenUnknownAppends: a client that keeps failing against a
// node that is not the leader leaves thousands of appends of unknown
// outcome; the check stays fast, and one of them that a read saw still
// counts.
func TestManyUnseenUnknownAppends(t *testing.T) {
	for _, seen := range []bool{false, true} {
		h := NewHistory()
		var all []string
		for i := range 3000 {
			now := int64(10 * i)
			h.Record(1, Input{Kind: Append, Key: "t/0", Value: fmt.Sprint("lost", i)}, Output{Unknown: true, End: -1}, now, 0)
			v := fmt.Sprint("v", i)
			if seen && i == 1500 {
				all = append(all, "lost1499")
			}
			h.Record(0, Input{Kind: Append, Key: "t/0", Value: v}, Output{Offset: int64(len(all)), End: -1}, now+1, now+2)
			all = append(all, v)
		}
		h.Record(2, Input{Kind: Read, Key: "t/0"}, Output{Values: all, End: int64(len(all))}, 1e9, 1e9+1)
		if err := h.Check(time.Minute, ""); err != nil {
			t.Errorf("seen=%v: %v", seen, err)
		}
	}
}

// TestManySeenUnknownAppends: kcat reports neither offsets nor successes,
// so all its appends are of unknown outcome and a final read holds them
// all; the check stays fast and still catches one stored twice.
func TestManySeenUnknownAppends(t *testing.T) {
	for _, dup := range []bool{false, true} {
		h := NewHistory()
		var all []string
		for i := range 3000 {
			now := int64(10 * i)
			v := fmt.Sprint("kc", i)
			h.Record(1, Input{Kind: Append, Key: "t/0", Value: v}, Output{Unknown: true, End: -1}, now, 0)
			all = append(all, v)
			if dup && i == 1000 {
				all = append(all, v)
			}
			w := fmt.Sprint("kg", i)
			h.Record(2, Input{Kind: Append, Key: "t/0", Value: w}, Output{Offset: -1, End: -1}, now+1, now+5000)
			all = append(all, w)
		}
		h.Record(3, Input{Kind: Read, Key: "t/0"}, Output{Values: all, End: int64(len(all))}, 1e9, 1e9+1)
		err := h.Check(time.Minute, "")
		if dup != errors.Is(err, ErrNotLinearizable) || !dup && err != nil {
			t.Errorf("dup=%v: %v", dup, err)
		}
	}
}
