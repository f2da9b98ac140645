package fileops

import (
	"errors"
	"fmt"
	"runtime/debug"
)

// ErrFault reports a memory fault while accessing a mapped file.
var ErrFault = errors.New("fault on a mapped file")

// Guard runs access, which loads from or stores into a mapped file, and
// turns a fault into an error wrapping ErrFault. An access to a mapping
// faults with SIGBUS when the page cannot be read (a media error) or lies
// past the end of a file truncated under the process; without this the
// runtime kills the process, with it one request fails.
// debug.SetPanicOnFault is per goroutine and cheap, so it is set around
// each access rather than for a goroutine's life. Panics that are not
// memory faults (no Addr method) are not Guard's to eat.
func Guard(access func()) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			fault, ok := r.(interface{ Addr() uintptr })
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("%w at %#x", ErrFault, fault.Addr())
		}
	}()
	access()
	return nil
}
