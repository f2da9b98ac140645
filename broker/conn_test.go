package broker

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
)

// TestReadErrorLogLevels: a client resetting its connection is a
// disconnect, not a warning (franz-go's suites made the broker warn
// "unreadable request" several times a run); a request that cannot be
// read still warns.
func TestReadErrorLogLevels(t *testing.T) {
	logger, hook := logtest.NewNullLogger()
	logger.SetLevel(logrus.DebugLevel)
	c := &conn{b: &Broker{log: logger}, remote: "127.0.0.1:1"}
	warnings := func() int {
		n := 0
		for _, e := range hook.AllEntries() {
			if e.Level <= logrus.WarnLevel {
				n++
			}
		}
		return n
	}
	c.logReadError(&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)})
	if n := warnings(); n != 0 {
		t.Errorf("a reset by the client logged %d warnings: %v", n, hook.AllEntries())
	}
	c.logReadError(errors.New("bad frame"))
	if n := warnings(); n != 1 {
		t.Errorf("an unreadable request logged %d warnings, want 1", n)
	}
}
