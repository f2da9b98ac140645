package consumequeue

// Room ahead of the appender.
//
// The appender is the dispatcher, whose pace every acks=-1 produce waits
// on. A store past the end of a file's view needed the file grown first
// (open, fallocate, close, and mremap past 64 KiB), and a store past the
// pages made ahead (zeroahead.go) needed the next ones made: file-system
// work on that goroutine, in a herd where a producer writes round robin,
// since every queue of a topic then reaches the same size in the same
// pass. In a fresh broker at 1,000 partitions the growths were 3.6-4.2%
// of the broker's CPU samples in two perf profiles, and 59 samples of one
// of them were such calls under the dispatcher; in a warm one a runtime
// trace put 31 ms of 3 s of the dispatcher's in the growths' system calls.
//
// So once a store passes three quarters of what is made (f.zeroed; at
// most a quarter of zeroAhead back from it), the file is put on the room
// maker's list, and its goroutine makes as much again (up to zeroAhead):
// it allocates the file's next size holding only sizeMu, then, under mu,
// extends the view and makes the pages. The appender waits for it only
// where it would have done the same work itself: for mu while the pages
// are made, and for a file it reaches the end of before its room was made
// (then it grows the file as before). A list that is full, or a failed
// allocation (a full disk), leaves the work to the appender, which meets
// the error where it did.
//
// A file's size is then not a function of its highest slot alone: it may
// be one growth step ahead, the added bytes zero, as any bytes past the
// last entry are. Nothing reads a file's size as a slot count.

// roomAsks is how many files can wait for room; past it the appender
// makes its own.
const roomAsks = 4096

// roomMaker makes room ahead of the appender on a goroutine of its own.
type roomMaker struct {
	asks chan *file
	stop chan struct{}
	done chan struct{}
}

func newRoomMaker() *roomMaker {
	r := &roomMaker{asks: make(chan *file, roomAsks), stop: make(chan struct{}), done: make(chan struct{})}
	go r.run()
	return r
}

func (r *roomMaker) run() {
	defer close(r.done)
	for {
		select {
		case <-r.stop:
			return
		case f := <-r.asks:
			f.makeRoom()
			f.ahead.Store(false)
		}
	}
}

// close stops the goroutine after the file under way; the files still
// asking get no room ahead, which the appender makes if it appends again.
func (r *roomMaker) close() {
	close(r.stop)
	<-r.done
}

// askRoomLocked asks for room ahead of a store that ended at end, unless
// what is made reaches far enough past it or is asked for already. Caller
// holds mu for writing and the file is mapped.
func (f *file) askRoomLocked(end int64) {
	if f.room == nil || f.zeroed >= f.fullSize() || end <= f.zeroed-min(zeroAhead, f.zeroed)/4 {
		return
	}
	if f.ahead.Swap(true) {
		return
	}
	f.roomTo = min(f.zeroed+min(zeroAhead, f.zeroed), f.fullSize())
	select {
	case f.room.asks <- f:
	default:
		f.ahead.Store(false)
	}
}

// makeRoom makes the room asked for (f.roomTo: as much again as was made
// when asked, up to zeroAhead): the file allocated, its view extended and
// the pages made. On the room maker's goroutine. Nothing is done where the
// appender got there first, for a file unmapped meanwhile (the appender
// makes its room as it maps it again), or for one cut shorter meanwhile,
// whose size the allocation may not have seen.
func (f *file) makeRoom() {
	f.mu.Lock()
	target := f.roomTo
	if f.m == nil || target <= f.zeroed {
		f.mu.Unlock()
		return
	}
	size := sizeFor(int((target-HeaderSize+EntrySize-1)/EntrySize)-1, f.epf)
	have, shrunk := int64(len(f.m)), f.shrunk
	f.mu.Unlock()
	if size > have {
		if err := f.allocateTo(size); err != nil {
			return
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil || f.shrunk != shrunk {
		return
	}
	if size > int64(len(f.m)) {
		if err := f.extendLocked(size); err != nil {
			return
		}
	}
	f.zeroAheadLocked(target)
}
