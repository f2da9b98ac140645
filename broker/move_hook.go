package broker

import "sync/atomic"

// MovePoint names a point of a partition move where a test may act,
// typically by stopping a node there (SetMoveHook).
type MovePoint int

const (
	// MoveCopied: the target stored what one fetch from the source
	// brought, before it reports its progress.
	MoveCopied MovePoint = iota + 1
	// MoveStopping: the source's leader saw the move fenced and is about
	// to stop produce to the partition and publish its End.
	MoveStopping
	// MoveSwitching: the target holds the partition up to End, durable
	// and replicated, and is about to switch it over.
	MoveSwitching
	// MoveConfirmed: the target found the source's epoch unchanged since
	// it published End and is about to switch the partition over.
	MoveConfirmed
)

// moveHook is the installed hook; nil (the default) costs one atomic load
// per move step, never anything on produce or fetch.
var moveHook atomic.Pointer[func(node int32, at MovePoint, mv PartitionMove) error]

// SetMoveHook installs fn, called by the node (its id) that reaches each
// MovePoint of a move; an error fails the step there, as a crash would,
// and the step is retried. For tests; nil removes it.
func SetMoveHook(fn func(node int32, at MovePoint, mv PartitionMove) error) {
	if fn == nil {
		moveHook.Store(nil)
		return
	}
	moveHook.Store(&fn)
}

// atMovePoint calls the hook, if any.
func (b *Broker) atMovePoint(at MovePoint, mv PartitionMove) error {
	if fn := moveHook.Load(); fn != nil {
		return (*fn)(b.cfg.NodeID, at, mv)
	}
	return nil
}
