package dispatcher

import (
	"testing"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/unilog/unilog/consumequeue"
)

func quietLogger() logrus.FieldLogger { l, _ := logtest.NewNullLogger(); return l }

// openQueues opens the consume-queue store in dir; the test's end closes
// it, if the test did not.
func openQueues(tb testing.TB, dir string) *consumequeue.Store {
	tb.Helper()
	return openQueuesWith(tb, consumequeue.Options{Dir: dir})
}

// openQueuesWith opens a store with opts, quiet.
func openQueuesWith(tb testing.TB, opts consumequeue.Options) *consumequeue.Store {
	tb.Helper()
	opts.Logger = quietLogger()
	qs, err := consumequeue.Open(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = qs.Close() })
	return qs
}
