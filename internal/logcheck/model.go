package logcheck

import (
	"fmt"
	"hash/maphash"
	"strings"

	"github.com/anishathalye/porcupine"
)

// Kind is the kind of an operation.
type Kind uint8

// Operation kinds; see the package doc for their semantics.
const (
	Append Kind = iota + 1
	Read
	Commit
	FetchOffset
)

func (k Kind) String() string {
	switch k {
	case Append:
		return "append"
	case Read:
		return "read"
	case Commit:
		return "commit"
	case FetchOffset:
		return "fetch-offset"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Input is what a client asked.
type Input struct {
	Kind Kind
	// Key names the log ("topic/partition") or the register
	// ("group/topic/partition"); operations on different keys are checked
	// independently.
	Key string
	// Value is the appended value.
	Value string
	// From is the first offset read.
	From int64
	// Offset is the committed offset.
	Offset int64
}

// Output is what the client was answered.
type Output struct {
	// Unknown marks an Append or Commit whose outcome the client could not
	// learn.
	Unknown bool
	// Offset is where an Append was stored (-1: acknowledged, the client
	// does not say where), or the offset a FetchOffset read (-1: none
	// committed).
	Offset int64
	// Values are the values read from Input.From on.
	Values []string
	// End is the log end a Read saw, -1 when not known.
	End int64
}

// entry is one stored value of a persistent log: appending shares the
// whole prefix, so a Step costs O(1) and states the checker caches stay
// small.
type entry struct {
	prev  *entry
	value string
	n     int64 // length of the log ending here
	hash  uint64
}

// state is a log (log != nil or empty) or a register (reg).
type state struct {
	log *entry
	reg int64
}

func (s state) len() int64 {
	if s.log == nil {
		return 0
	}
	return s.log.n
}

var seed = maphash.MakeSeed()

func (s state) appended(v string) state {
	var h uint64
	if s.log != nil {
		h = s.log.hash
	}
	h = h*1099511628211 ^ maphash.String(seed, v)
	return state{log: &entry{prev: s.log, value: v, n: s.len() + 1, hash: h}, reg: s.reg}
}

// matches reports whether vs are the values at offsets [from, from+len(vs)).
func (s state) matches(from int64, vs []string) bool {
	last := from + int64(len(vs)) - 1
	if from < 0 || last >= s.len() {
		return false
	}
	e := s.log
	for e != nil && e.n-1 > last {
		e = e.prev
	}
	for i := len(vs) - 1; i >= 0; i-- {
		if e.value != vs[i] {
			return false
		}
		e = e.prev
	}
	return true
}

func step(st, in, out any) (bool, any) {
	s, i, o := st.(state), in.(Input), out.(Output)
	switch i.Kind {
	case Append:
		if !o.Unknown && o.Offset >= 0 && o.Offset != s.len() {
			return false, s
		}
		return true, s.appended(i.Value)
	case Read:
		if o.End >= 0 && o.End != s.len() {
			return false, s
		}
		return s.matches(i.From, o.Values), s
	case Commit:
		return true, state{reg: i.Offset}
	case FetchOffset:
		return s.reg == o.Offset, s
	}
	return false, s
}

func equal(a, b any) bool {
	x, y := a.(state), b.(state)
	if x.reg != y.reg || x.len() != y.len() {
		return false
	}
	for e, f := x.log, y.log; e != f; e, f = e.prev, f.prev {
		if e.hash != f.hash || e.value != f.value {
			return false
		}
	}
	return true
}

func hash(st any) uint64 {
	s := st.(state)
	if s.log == nil {
		return uint64(s.reg)
	}
	return s.log.hash
}

func partition(ops []porcupine.Operation) [][]porcupine.Operation {
	byKey := map[string]int{}
	var out [][]porcupine.Operation
	for _, op := range ops {
		k := op.Input.(Input).Key
		i, ok := byKey[k]
		if !ok {
			i = len(out)
			byKey[k] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], op)
	}
	return out
}

func describeOperation(in, out any) string {
	i, o := in.(Input), out.(Output)
	result := fmt.Sprint(o.Offset)
	if o.Unknown {
		result = "?"
	}
	switch i.Kind {
	case Append:
		return fmt.Sprintf("append(%s, %q) -> %s", i.Key, i.Value, result)
	case Read:
		end := ""
		if o.End >= 0 {
			end = fmt.Sprintf(" end %d", o.End)
		}
		return fmt.Sprintf("read(%s, %d) -> [%s]%s", i.Key, i.From, strings.Join(o.Values, " "), end)
	case Commit:
		return fmt.Sprintf("commit(%s, %d) -> %v", i.Key, i.Offset, map[bool]string{true: "?", false: "ok"}[o.Unknown])
	case FetchOffset:
		return fmt.Sprintf("fetch-offset(%s) -> %d", i.Key, o.Offset)
	}
	return i.Kind.String()
}

func describeState(st any) string {
	s := st.(state)
	if s.log == nil {
		return fmt.Sprintf("len 0, committed %d", s.reg)
	}
	return fmt.Sprintf("len %d, last %q", s.log.n, s.log.value)
}

// Model is the porcupine model of partition logs and group offset
// registers.
var Model = porcupine.Model{
	Partition:         partition,
	Init:              func() any { return state{reg: -1} },
	Step:              step,
	Equal:             equal,
	Hash:              hash,
	DescribeOperation: describeOperation,
	DescribeState:     describeState,
}
