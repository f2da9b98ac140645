package controlplane

import "sync/atomic"

// metadataWatchHook is the installed hook; nil (the default) costs one
// atomic load per metadata change a watch delivers.
var metadataWatchHook atomic.Pointer[func(node int32)]

// SetMetadataWatchHook installs fn, called by each node's metadata watch
// (its node id; -1 for a tool's) before it applies a change it received,
// past the initial values: a test blocks in fn to make a node's view lag
// the bucket. For tests; nil removes it.
func SetMetadataWatchHook(fn func(node int32)) {
	if fn == nil {
		metadataWatchHook.Store(nil)
		return
	}
	metadataWatchHook.Store(&fn)
}

// atMetadataWatch calls the hook, if any.
func (m *Metadata) atMetadataWatch() {
	if fn := metadataWatchHook.Load(); fn != nil {
		(*fn)(m.node)
	}
}
