package main

import (
	"io"
	"os"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/unilog/unilog/broker"
	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/store"
)

// testBrokerFileSize keeps commit log files small: each is fallocated and
// pre-faulted up front, and tests write little.
const testBrokerFileSize = 8 << 20

// startTestBroker starts a unilog broker on a free port and a fresh data
// directory, closed when the test ends.
func startTestBroker(t *testing.T) string {
	t.Helper()
	b, err := broker.Open(broker.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Logger: quietLogger()}, testStore())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("broker close: %v", err)
		}
	})
	return b.Addr()
}

// testStore is the store of a test broker: small commit-log files.
func testStore() store.Options {
	return store.Options{CommitLog: commitlog.Options{FileSize: testBrokerFileSize}}
}

func quietLogger() *logrus.Logger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// startFakeKafka starts franz-go's in-memory Kafka, to show the client
// commands assume nothing unilog-specific.
func startFakeKafka(t *testing.T) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

// eachBroker runs fn against a unilog broker and against kfake.
func eachBroker(t *testing.T, fn func(t *testing.T, addr string)) {
	t.Run("unilog", func(t *testing.T) { fn(t, startTestBroker(t)) })
	t.Run("kfake", func(t *testing.T) { fn(t, startFakeKafka(t)) })
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
