package broker

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/unilog/unilog/auth"
)

// FuzzRequest feeds arbitrary bytes through the whole request path of one
// connection: framing, request header, kmsg decoding and the handlers, on a
// broker with real storage. Nothing may panic; errors just end the input.
func FuzzRequest(f *testing.F) {
	fuzzRequestPath(f, testConfig(f, f.TempDir()))
}

func fuzzRequestPath(f *testing.F, cfg Config) {
	cfg.Admin = ""
	// The fuzz target's *testing.F must not log from inside f.Fuzz.
	quiet := logrus.New()
	quiet.SetOutput(io.Discard)
	cfg.Logger = quiet
	cfg.MaxRequestBytes = 1 << 20
	b, err := Open(cfg, testStore())
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { b.Close() })
	opts := []kgo.Opt{kgo.SeedBrokers(b.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner())}
	if cfg.Security.Credentials != nil {
		opts = append(opts, kgo.SASL(scramMech(auth.ScramSHA256, "alice", "alice-pw")))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		f.Fatal(err)
	}
	createTopic(f, cl, "fuzz", 2)
	produceSync(f, cl, "fuzz", 0, "seed")
	cl.Close()

	f.Fuzz(func(t *testing.T, data []byte) {
		local, remote := net.Pipe()
		defer local.Close()
		defer remote.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		c := newConn(b, local)
		c.r = bufio.NewReader(bytes.NewReader(data))
		c.ctx = ctx
		for {
			frame, err := c.readFrame()
			if err != nil {
				return
			}
			if _, err := c.handle(frame.B); err != nil {
				return
			}
		}
	})
}
