package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/unilog/unilog/internal/logcheck"
)

// retriable classifies an error a client surfaced: a Kafka error code its
// protocol marks retriable, a broken or refused connection, or a timeout.
// Anything else (a corrupt message, an unsupported version, an
// authorization failure) is a bug for a client to see in a failover.
func retriable(err error) bool {
	var ke *kerr.Error
	var kge kafka.Error
	var ne net.Error
	switch {
	case errors.As(err, &ke):
		return ke.Retriable
	case errors.As(err, &kge):
		return kge.Temporary()
	case errors.As(err, &ne),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, kgo.ErrRecordTimeout):
		return true
	}
	return false
}

// kcatRetriable are the librdkafka errors a failover may surface, as kcat
// prints them.
var kcatRetriable = regexp.MustCompile(`(?i)not leader|leader not available|not enough in-sync replicas|` +
	`message timed out|request timed out|timed out|connection refused|connection reset|disconnected|` +
	`broker transport failure|all broker connections are down|unknown topic or partition|` +
	`NOT_LEADER|LEADER_NOT_AVAILABLE|NOT_ENOUGH_REPLICAS|_TRANSPORT|_TIMED_OUT|_ALL_BROKERS_DOWN`)

// kcatError picks the error lines out of kcat's stderr: delivery failures
// and librdkafka logs of level error or warning (%3, %4).
var kcatError = regexp.MustCompile(`Delivery failed|^%[0-4]\|`)

// TestClientsProduceThroughFailover runs franz-go, kafka-go and kcat
// (librdkafka) producers with acks=-1 through a SIGKILL of the leader.
// Every error any of them surfaces must be retriable, each must have
// records acknowledged after the failover, and nothing franz-go or
// kafka-go had acknowledged may be lost.
func TestClientsProduceThroughFailover(t *testing.T) {
	kcatPath := kcatBinary(t)
	g := startBrokerGroup(t, 3)
	const topic = "clients"
	const partitions = 3
	g.createTopic(topic, partitions)
	h := logcheck.NewHistory()

	type stats struct {
		mu     sync.Mutex
		acked  atomic.Int64
		errors map[string]int
		bad    []string
	}
	clients := map[string]*stats{"franz-go": {}, "kafka-go": {}, "kcat": {}}
	for _, s := range clients {
		s.errors = map[string]int{}
	}
	surfaced := func(name string, err error, ok bool) {
		s := clients[name]
		s.mu.Lock()
		defer s.mu.Unlock()
		s.errors[err.Error()]++
		if !ok {
			s.bad = append(s.bad, err.Error())
		}
	}

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	every := time.NewTicker(5 * time.Millisecond)
	defer every.Stop()
	// paced waits for the next tick; false once the test stops producing.
	paced := func() bool {
		select {
		case <-ctx.Done():
			return false
		case <-every.C:
			return true
		}
	}

	franz, err := kgo.NewClient(kgo.SeedBrokers(g.seeds()...), kgo.MetadataMinAge(100*time.Millisecond),
		kgo.RecordDeliveryTimeout(3*time.Second), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer franz.Close()
	wg.Go(func() {
		for seq := 0; paced(); seq++ {
			p := int32(seq % partitions)
			v := fmt.Sprint("fg-", seq)
			op := h.Begin(300, logcheck.Input{Kind: logcheck.Append, Key: logKey(topic, p), Value: v})
			r, err := franz.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)}).First()
			if err != nil {
				surfaced("franz-go", err, retriable(err))
				op.End(logcheck.Output{Unknown: true, End: -1})
				continue
			}
			clients["franz-go"].acked.Add(1)
			op.End(logcheck.Output{Offset: r.Offset, End: -1})
		}
	})

	// The message key names the partition, so the history knows it.
	byKey := kafka.BalancerFunc(func(m kafka.Message, _ ...int) int { return int(m.Key[0] - '0') })
	writer := &kafka.Writer{Addr: kafka.TCP(g.seeds()...), Topic: topic, Balancer: byKey,
		RequiredAcks: kafka.RequireAll, MaxAttempts: 1, BatchTimeout: time.Millisecond,
		WriteBackoffMin: 50 * time.Millisecond, WriteBackoffMax: 500 * time.Millisecond}
	defer writer.Close()
	wg.Go(func() {
		for seq := 0; paced(); seq++ {
			p := int32(seq % partitions)
			v := fmt.Sprint("kg-", seq)
			op := h.Begin(301, logcheck.Input{Kind: logcheck.Append, Key: logKey(topic, p), Value: v})
			wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := writer.WriteMessages(wctx, kafka.Message{Key: []byte{byte('0' + p)}, Value: []byte(v)})
			cancel()
			if err != nil {
				var werrs kafka.WriteErrors
				if !errors.As(err, &werrs) {
					werrs = kafka.WriteErrors{err}
				}
				for _, e := range werrs {
					surfaced("kafka-go", e, retriable(e))
				}
				op.End(logcheck.Output{Unknown: true, End: -1})
				continue
			}
			clients["kafka-go"].acked.Add(1)
			op.End(logcheck.Output{Offset: -1, End: -1})
		}
	})

	// kcat reports failures only: its records are appends of unknown
	// outcome, to partition 0, each called when written to its stdin.
	kcatCtx, kcatKill := context.WithTimeout(context.Background(), 2*time.Minute)
	defer kcatKill()
	kcat := exec.CommandContext(kcatCtx, kcatPath, "-P", "-b", strings.Join(g.seeds(), ","), "-t", topic, "-p", "0",
		"-X", "enable.idempotence=true", "-X", "message.timeout.ms=10000", "-X", "topic.metadata.refresh.interval.ms=500")
	stdin, err := kcat.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderrPath := filepath.Join(t.TempDir(), "kcat.stderr")
	stderr, err := os.Create(stderrPath)
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	kcat.Stderr = stderr
	if err := kcat.Start(); err != nil {
		t.Fatal(err)
	}
	var kcatSent atomic.Int64
	wg.Go(func() {
		defer stdin.Close()
		w := bufio.NewWriter(stdin)
		for seq := 0; paced(); seq++ {
			v := fmt.Sprint("kc-", seq)
			h.Begin(302, logcheck.Input{Kind: logcheck.Append, Key: logKey(topic, 0), Value: v})
			fmt.Fprintln(w, v)
			if err := w.Flush(); err != nil {
				t.Errorf("kcat stdin: %v", err)
				return
			}
			kcatSent.Store(int64(seq + 1))
		}
	})

	waitAcked := func(what string, n int64) {
		base := map[string]int64{}
		for name, s := range clients {
			base[name] = s.acked.Load()
		}
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
			f, k := clients["franz-go"].acked.Load()-base["franz-go"], clients["kafka-go"].acked.Load()-base["kafka-go"]
			if f >= n && k >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d by franz-go, %d by kafka-go, want %d each", what, f, k, n)
			}
		}
	}
	waitAcked("records acknowledged to franz-go and kafka-go", 100)
	old, st := g.leader()
	g.kill(old)
	killed := time.Now()
	next := g.waitLeader(st.Epoch+1, old)
	t.Logf("SIGKILLed leader node %d; node %d leads after %s", g.nodes[old].id, g.nodes[next].id, time.Since(killed).Round(time.Millisecond))
	waitAcked("records acknowledged after the failover", 100)
	afterFailover := kcatSent.Load()
	// kcat gets as long again as the others needed to show progress.
	<-time.After(time.Since(killed))
	stop()
	wg.Wait()
	if err := kcat.Wait(); err != nil {
		t.Logf("kcat exited: %v", err)
	}

	logs := finalRead(t, h, 310, g.seeds(), topic, partitions)
	checkHistory(t, h, "clients")

	kcatOut, err := os.ReadFile(stderrPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(kcatOut), "\n") {
		if kcatError.MatchString(line) {
			err := errors.New(strings.TrimSpace(line))
			surfaced("kcat", err, kcatRetriable.MatchString(line))
		}
	}
	// kcat's progress: records it was given after the failover are stored.
	stored := map[string]bool{}
	for _, v := range logs[0] {
		stored[v] = true
	}
	kcatStored := 0
	for seq := afterFailover; seq < kcatSent.Load(); seq++ {
		if stored[fmt.Sprint("kc-", seq)] {
			kcatStored++
		}
	}
	clients["kcat"].acked.Store(int64(kcatStored))

	for _, name := range []string{"franz-go", "kafka-go", "kcat"} {
		s := clients[name]
		what := "records acknowledged"
		if name == "kcat" {
			what = "records given after the failover and stored"
		}
		t.Logf("%s: %d %s; errors surfaced: %v", name, s.acked.Load(), what, s.errors)
		for _, e := range s.bad {
			t.Errorf("%s surfaced a non-retriable error: %s", name, e)
		}
		if s.acked.Load() == 0 {
			t.Errorf("%s stored nothing after the failover", name)
		}
	}
}
