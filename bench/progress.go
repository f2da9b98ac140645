package bench

import (
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/sys/unix"
)

// StderrIsTerminal reports whether stderr is a terminal, where a progress
// bar belongs.
func StderrIsTerminal() bool {
	_, err := unix.IoctlGetTermios(int(os.Stderr.Fd()), unix.TCGETS)
	return err == nil
}

// progress redraws a bar from a counter a few times a second, so that the
// producers only bump an atomic instead of contending on the bar.
type progress struct {
	bar  *progressbar.ProgressBar
	stop chan struct{}
	done chan struct{}
	read func() int64
}

func newProgress(enabled bool, total int64, description string, read func() int64, bytes bool) *progress {
	if !enabled {
		return &progress{}
	}
	p := &progress{
		bar: progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(os.Stderr),
			progressbar.OptionSetDescription(description),
			progressbar.OptionShowBytes(bytes),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish()),
		stop: make(chan struct{}),
		done: make(chan struct{}),
		read: read,
	}
	go func() {
		defer close(p.done)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.bar.Set64(p.read())
			}
		}
	}()
	return p
}

func (p *progress) finish() {
	if p.bar == nil {
		return
	}
	close(p.stop)
	<-p.done
	p.bar.Set64(p.read())
	p.bar.Finish()
}
