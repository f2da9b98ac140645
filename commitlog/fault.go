package commitlog

import (
	"fmt"
	"runtime/debug"
)

// guard runs read, which loads from a mapped file, turning a fault into an
// error wrapping ErrIO. A load from a mapping faults with SIGBUS when the
// page cannot be read (a media error) or lies past the end of a file
// truncated under the log; without this the runtime kills the process,
// with it one request fails. debug.SetPanicOnFault is per goroutine and
// cheap, so it is set around each read rather than for a goroutine's life.
// Panics that are not memory faults (no Addr method) are not ours to eat.
func guard(read func()) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			fault, ok := r.(interface{ Addr() uintptr })
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("%w: fault at %#x", ErrIO, fault.Addr())
		}
	}()
	read()
	return nil
}
