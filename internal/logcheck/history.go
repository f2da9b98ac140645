package logcheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// ErrNotLinearizable reports a history no sequential run of the model
// explains.
var ErrNotLinearizable = errors.New("logcheck: history is not linearizable")

// ErrProducerOrder reports a client whose acknowledged appends to one log
// were stored out of the order it made them.
var ErrProducerOrder = errors.New("logcheck: appends of one client stored out of call order")

// ErrUndecided reports a check that ran out of time.
var ErrUndecided = errors.New("logcheck: linearizability check timed out")

// History collects operations from many goroutines. Times are on the
// recorder's monotonic clock.
type History struct {
	mu    sync.Mutex
	start time.Time
	ops   []porcupine.Operation
	ended []bool
}

// NewHistory starts an empty history.
func NewHistory() *History { return &History{start: time.Now()} }

// Op is an operation begun and not yet ended.
type Op struct {
	h *History
	i int
}

// Begin records the call of an operation by client now. An operation never
// ended counts as one whose outcome is unknown.
func (h *History) Begin(client int, in Input) Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Call: h.Now(), Output: Output{Unknown: true, End: -1}, Return: math.MaxInt64})
	h.ended = append(h.ended, false)
	return Op{h: h, i: len(h.ops) - 1}
}

// End records the answer now. An output with Unknown set keeps the
// operation open forever: it may take effect at any later time.
func (o Op) End(out Output) {
	h := o.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ended[o.i] {
		panic("logcheck: operation ended twice")
	}
	h.ended[o.i] = true
	op := &h.ops[o.i]
	op.Output = out
	if out.Unknown {
		return
	}
	// porcupine wants a return strictly after the call.
	op.Return = max(h.Now(), op.Call+1)
}

// Record adds an operation that took place between call and ret, both
// read from Now; ret is ignored when out.Unknown is set.
func (h *History) Record(client int, in Input, out Output, call, ret int64) {
	ret = max(ret, call+1)
	if out.Unknown {
		ret = math.MaxInt64
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
	h.ended = append(h.ended, true)
}

// Now is the history's clock in nanoseconds, for Record.
func (h *History) Now() int64 { return int64(time.Since(h.start)) }

// Operations returns a copy of the history so far.
func (h *History) Operations() []porcupine.Operation {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]porcupine.Operation(nil), h.ops...)
}

// WriteJSON writes the history as a JSON array of porcupine operations
// (times in nanoseconds from the history's start), for a person
// investigating a failure with other tools.
func (h *History) WriteJSON(path string) error {
	b, err := json.Marshal(h.Operations())
	if err != nil {
		return fmt.Errorf("logcheck: history: %w", err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("logcheck: write history: %w", err)
	}
	return nil
}

// Stats counts the operations of each kind, and the acknowledged appends.
type Stats struct {
	Appends, Acked, Reads, ReadValues, Commits, Fetches int
}

func (s Stats) String() string {
	return fmt.Sprintf("appends=%d acked=%d reads=%d read_values=%d commits=%d offset_fetches=%d",
		s.Appends, s.Acked, s.Reads, s.ReadValues, s.Commits, s.Fetches)
}

// Stats summarises the history so far.
func (h *History) Stats() Stats {
	var s Stats
	for _, op := range h.Operations() {
		in, out := op.Input.(Input), op.Output.(Output)
		switch in.Kind {
		case Append:
			s.Appends++
			if !out.Unknown {
				s.Acked++
			}
		case Read:
			s.Reads++
			s.ReadValues += len(out.Values)
		case Commit:
			s.Commits++
		case FetchOffset:
			s.Fetches++
		}
	}
	return s
}

// Check verifies the history (see the package doc) within timeout. When it
// is not linearizable and vizPath is not empty, the offending partitions
// are drawn there as an HTML page.
func (h *History) Check(timeout time.Duration, vizPath string) error {
	ops := pruneUnseen(h.Operations())
	if err := checkProducerOrder(ops); err != nil {
		return err
	}
	ops = placeByFinalRead(ops)
	res, info := porcupine.CheckOperationsVerbose(Model, ops, timeout)
	switch res {
	case porcupine.Ok:
		return nil
	case porcupine.Unknown:
		return fmt.Errorf("%w after %s (%d operations)", ErrUndecided, timeout, len(ops))
	}
	err := fmt.Errorf("%w: %s (%d operations)", ErrNotLinearizable, strings.Join(illegalKeys(ops, timeout), ", "), len(ops))
	if vizPath == "" {
		return err
	}
	if verr := porcupine.VisualizePath(Model, info, vizPath); verr != nil {
		return fmt.Errorf("%w; visualization: %w", err, verr)
	}
	return fmt.Errorf("%w; see %s", err, vizPath)
}

// illegalKeys names the logs and registers whose own history is not
// linearizable.
func illegalKeys(ops []porcupine.Operation, timeout time.Duration) []string {
	var keys []string
	for _, part := range partition(ops) {
		if porcupine.CheckOperationsTimeout(Model, part, timeout) == porcupine.Illegal {
			keys = append(keys, part[0].Input.(Input).Key)
		}
	}
	return keys
}

func checkProducerOrder(ops []porcupine.Operation) error {
	type stream struct {
		client int
		key    string
	}
	acked := map[stream][]porcupine.Operation{}
	for _, op := range ops {
		in, out := op.Input.(Input), op.Output.(Output)
		if in.Kind == Append && !out.Unknown && out.Offset >= 0 {
			s := stream{op.ClientId, in.Key}
			acked[s] = append(acked[s], op)
		}
	}
	for s, list := range acked {
		sort.SliceStable(list, func(i, j int) bool { return list[i].Call < list[j].Call })
		for i := 1; i < len(list); i++ {
			prev, cur := list[i-1], list[i]
			if cur.Output.(Output).Offset <= prev.Output.(Output).Offset {
				return fmt.Errorf("%w: client %d, %s: %q called after %q is at offset %d, not after %d", ErrProducerOrder,
					s.client, s.key, cur.Input.(Input).Value, prev.Input.(Input).Value, cur.Output.(Output).Offset, prev.Output.(Output).Offset)
			}
		}
	}
	return nil
}

// pruneUnseen drops the operations of unknown outcome that no read saw
// the effect of. Such an operation can always be linearized last, so
// dropping it keeps the verdict; kept, every one is a candidate at every
// step of the search, and a client retrying against a node that is not
// the leader makes thousands.
func pruneUnseen(ops []porcupine.Operation) []porcupine.Operation {
	values := map[string]bool{}
	offsets := map[string]map[int64]bool{}
	for _, op := range ops {
		in, out := op.Input.(Input), op.Output.(Output)
		switch in.Kind {
		case Read:
			for _, v := range out.Values {
				values[v] = true
			}
		case FetchOffset:
			if offsets[in.Key] == nil {
				offsets[in.Key] = map[int64]bool{}
			}
			offsets[in.Key][out.Offset] = true
		}
	}
	kept := ops[:0]
	for _, op := range ops {
		in, out := op.Input.(Input), op.Output.(Output)
		if out.Unknown && (in.Kind == Append && !values[in.Value] || in.Kind == Commit && !offsets[in.Key][in.Offset]) {
			continue
		}
		kept = append(kept, op)
	}
	return kept
}

// placeByFinalRead gives each append that a complete read (from offset 0
// to the end it saw) holds, and whose offset the client does not know,
// the offset that read found it at, and ends it no later than that read.
// Values are unique, so the model could place it nowhere else and it took
// effect before the read: the verdict stays the same, and the search no
// longer tries an append of unknown outcome at every step (kcat reports
// no offsets and no successes, which makes thousands).
func placeByFinalRead(ops []porcupine.Operation) []porcupine.Operation {
	type place struct {
		offset int64
		by     int64 // the read's return
	}
	found := map[string]map[string]place{}
	for _, op := range ops {
		in, out := op.Input.(Input), op.Output.(Output)
		if in.Kind != Read || in.From != 0 || out.End != int64(len(out.Values)) {
			continue
		}
		if found[in.Key] == nil {
			found[in.Key] = map[string]place{}
		}
		for i, v := range out.Values {
			if p, ok := found[in.Key][v]; !ok || op.Return < p.by {
				found[in.Key][v] = place{int64(i), op.Return}
			}
		}
	}
	out := make([]porcupine.Operation, len(ops))
	for i, op := range ops {
		in, o := op.Input.(Input), op.Output.(Output)
		p, ok := found[in.Key][in.Value]
		if in.Kind == Append && ok && (o.Unknown || o.Offset < 0) {
			op.Output = Output{Offset: p.offset, End: -1}
			op.Return = max(min(op.Return, p.by), op.Call+1)
		}
		out[i] = op
	}
	return out
}
