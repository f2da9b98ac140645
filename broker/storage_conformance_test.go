package broker_test

import (
	"io"
	"sync"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/unilog/unilog/broker"
	"github.com/unilog/unilog/broker/storagetest"
	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/store"
)

// TestStorageConformance runs the Storage suite over the unified log in
// both flush modes.
func TestStorageConformance(t *testing.T) {
	for _, flush := range []commitlog.FlushMode{commitlog.FlushAsync, commitlog.FlushSync} {
		t.Run(flush.String(), func(t *testing.T) {
			var forgotten sync.Map // dir + "/" + topic
			storagetest.Run(t, func(t *testing.T, dir string) broker.Storage {
				log := logrus.New()
				log.SetOutput(io.Discard)
				st, err := store.Open(store.Options{
					Dir:       dir,
					CommitLog: commitlog.Options{FileSize: 1 << 20, FlushMode: flush},
					Live: func(topic string) (store.TopicID, bool) {
						_, gone := forgotten.Load(dir + "/" + topic)
						return store.TopicID{}, !gone
					},
					Logger: log,
				})
				if err != nil {
					t.Fatal(err)
				}
				return st
			}, storagetest.Options{Scans: true, Replicates: true, Moves: true, Forget: func(dir, topic string) { forgotten.Store(dir+"/"+topic, true) }})
		})
	}
}
