// Command soak runs a unilog broker as a child process under sustained load
// and faults, then checks what it promised: franz-go producers (acks=all,
// idempotent) and consumers, idle long-pollers on many partitions, random
// client disconnects, and a SIGKILL and restart of the broker (with
// --flush sync) every --kill-every. At the end every acknowledged record
// must be stored exactly once, and the broker's anonymous memory (RssAnon,
// the heap and stacks; mapped log files are excluded) must stay flat.
//
// It is not part of CI: `make soak` runs it for 10 minutes,
// `make soak SOAK_DURATION=1m` for a quick try.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

type options struct {
	bin                 string
	dir                 string
	duration, killEvery time.Duration
	disconnectEvery     time.Duration
	producers           int
	consumers           int
	pollers             int
	partitions          int
	idlePartitions      int
	rate                int
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "bin/unilog", "unilog binary to run as the broker")
	flag.StringVar(&o.dir, "dir", "", "data directory (default: a new temporary directory, removed on success)")
	flag.DurationVar(&o.duration, "duration", 10*time.Minute, "how long to run the load")
	flag.DurationVar(&o.killEvery, "kill-every", time.Minute, "SIGKILL and restart the broker this often")
	flag.DurationVar(&o.disconnectEvery, "disconnect-every", 3*time.Second, "mean time between random client disconnects")
	flag.IntVar(&o.producers, "producers", 6, "producing clients (acks=all, idempotent)")
	flag.IntVar(&o.consumers, "consumers", 4, "consuming clients reading the produced topic")
	flag.IntVar(&o.pollers, "pollers", 4, "clients long-polling an idle topic")
	flag.IntVar(&o.partitions, "partitions", 16, "partitions of the produced topic")
	flag.IntVar(&o.idlePartitions, "idle-partitions", 1000, "partitions of the idle topic")
	flag.IntVar(&o.rate, "rate", 1000, "records per second per producer (bounds the set of acknowledged records kept in memory)")
	flag.Parse()
	ok, err := run(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

func run(o options) (bool, error) {
	keep := o.dir != ""
	if !keep {
		d, err := os.MkdirTemp("", "unilog-soak-")
		if err != nil {
			return false, err
		}
		o.dir = d
	}
	addr, err := freeAddr()
	if err != nil {
		return false, err
	}
	admin, err := freeAddr()
	if err != nil {
		return false, err
	}
	br := &brokerProc{bin: o.bin, dir: o.dir, addr: addr, admin: admin}
	if err := br.start(); err != nil {
		return false, err
	}
	defer br.stop()

	ctx, cancel := context.WithTimeout(context.Background(), o.duration)
	defer cancel()
	adm, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return false, err
	}
	defer adm.Close()
	for name, n := range map[string]int{"soak": o.partitions, "idle": o.idlePartitions} {
		if _, err := kadm.NewClient(adm).CreateTopic(context.Background(), int32(n), 1, nil, name); err != nil {
			return false, fmt.Errorf("create topic %s: %w", name, err)
		}
	}
	fmt.Printf("soak: broker %s, data %s, %v of load, SIGKILL every %v\n", addr, o.dir, o.duration, o.killEvery)

	var (
		acked    = newValueSet()
		produced atomic.Int64
		failed   atomic.Int64
		consumed atomic.Int64
		drops    atomic.Int64
		wg       sync.WaitGroup
	)
	for i := range o.producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			produce(ctx, addr, int32(i), o.rate, o.disconnectEvery*time.Duration(o.producers), acked, &produced, &failed, &drops)
		}()
	}
	for range o.consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Bounded fetches: a consumer re-reading from the start then costs
			// the broker the same memory whatever the topic has grown to,
			// so memory growth from life to life means a leak.
			consume(ctx, o.disconnectEvery*time.Duration(o.consumers), &drops, kgo.ConsumeTopics("soak"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
				kgo.FetchMaxWait(500*time.Millisecond), kgo.FetchMaxBytes(1<<20), kgo.FetchMaxPartitionBytes(256<<10), kgo.SeedBrokers(addr), counting(&consumed))
		}()
	}
	for range o.pollers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			consume(ctx, o.disconnectEvery*time.Duration(o.pollers), &drops, kgo.ConsumeTopics("idle"), kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()), kgo.FetchMaxWait(100*time.Millisecond), kgo.SeedBrokers(addr))
		}()
	}

	var samples []rssSample
	kill := time.NewTicker(o.killEvery)
	defer kill.Stop()
	sample := time.NewTicker(10 * time.Second)
	defer sample.Stop()
	start := time.Now()
	kills := 0
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-kill.C:
			if err := br.kill(); err != nil {
				return false, err
			}
			kills++
			if err := br.start(); err != nil {
				return false, err
			}
			fmt.Printf("soak: %5.0fs SIGKILL #%d, broker restarted (pid %d)\n", time.Since(start).Seconds(), kills, br.cmd.Process.Pid)
		case <-sample.C:
			s := br.rss()
			s.at = time.Since(start)
			samples = append(samples, s)
			fmt.Printf("soak: %5.0fs broker pid %d life %3.0fs RssAnon %6.1f MiB VmRSS %6.1f MiB heap %s connections %s fetch_watchers %s | produced %d acked %d failed %d consumed %d disconnects %d\n",
				s.at.Seconds(), br.cmd.Process.Pid, s.life.Seconds(), mib(s.anon), mib(s.total), br.metric("go_memstats_heap_inuse_bytes"), br.metric("unilog_connections"), br.metric("unilog_fetch_watchers"),
				produced.Load(), acked.len(), failed.Load(), consumed.Load(), drops.Load())
		}
	}
	wg.Wait()
	fmt.Printf("soak: load stopped after %v: %d produced, %d acknowledged, %d failed (not acknowledged), %d SIGKILLs under load (and one more before the check), %d client disconnects\n",
		time.Since(start).Round(time.Second), produced.Load(), acked.len(), failed.Load(), kills, drops.Load())

	// One more crash before the check: acknowledged means durable.
	if err := br.kill(); err != nil {
		return false, err
	}
	if err := br.start(); err != nil {
		return false, err
	}
	stored, err := readAll(addr, "soak")
	if err != nil {
		return false, err
	}
	dataOK := verdictData(acked, stored)
	memOK := verdictRSS(samples, o.killEvery)
	if dataOK && memOK && !keep {
		br.stop()
		os.RemoveAll(o.dir)
	}
	return dataOK && memOK, nil
}

// value identifies one produced record: producer, client generation of the
// producer, sequence within it. Its text form is the record value.
type value struct{ producer, gen, seq int32 }

func (v value) String() string { return fmt.Sprintf("p%d-g%d-%d", v.producer, v.gen, v.seq) }

func parseValue(b []byte) (value, bool) {
	var v value
	_, err := fmt.Sscanf(string(b), "p%d-g%d-%d", &v.producer, &v.gen, &v.seq)
	return v, err == nil
}

// valueSet is the set of acknowledged records.
type valueSet struct {
	mu sync.Mutex
	m  map[value]struct{}
}

func newValueSet() *valueSet { return &valueSet{m: make(map[value]struct{})} }

func (s *valueSet) add(v value) {
	s.mu.Lock()
	s.m[v] = struct{}{}
	s.mu.Unlock()
}

func (s *valueSet) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// produce runs one producer, replaced by a new client (a new producer id) at
// random intervals; every value is produced once and counted as
// acknowledged only on success.
func produce(ctx context.Context, addr string, idx int32, rate int, meanLife time.Duration, acked *valueSet, produced, failed, drops *atomic.Int64) {
	const tick = 10 * time.Millisecond
	perTick := max(1, rate/int(time.Second/tick))
	pace := time.NewTicker(tick)
	defer pace.Stop()
	for gen := int32(0); ctx.Err() == nil; gen++ {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("soak"), kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.RecordDeliveryTimeout(20*time.Second), kgo.ProducerLinger(2*time.Millisecond))
		if err != nil {
			return
		}
		life := time.After(randDuration(meanLife))
		var inflight sync.WaitGroup
	client:
		for seq := int32(0); ; {
			select {
			case <-ctx.Done():
				break client
			case <-life:
				break client
			case <-pace.C:
			}
			for range perTick {
				v := value{idx, gen, seq}
				seq++
				produced.Add(1)
				inflight.Add(1)
				cl.Produce(context.Background(), &kgo.Record{Value: []byte(v.String())}, func(_ *kgo.Record, err error) {
					defer inflight.Done()
					if err != nil {
						failed.Add(1)
						return
					}
					acked.add(v)
				})
			}
		}
		if ctx.Err() == nil {
			// An abrupt disconnect: whatever is in flight fails or lands.
			drops.Add(1)
		} else {
			cl.Flush(context.Background())
		}
		cl.Close()
		inflight.Wait()
	}
}

func counting(n *atomic.Int64) kgo.Opt {
	return kgo.WithHooks(fetchCounter{n})
}

type fetchCounter struct{ n *atomic.Int64 }

func (c fetchCounter) OnFetchBatchRead(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.FetchBatchMetrics) {
	c.n.Add(int64(m.NumRecords))
}

// consume runs one consuming client, closed and replaced at random
// intervals.
func consume(ctx context.Context, meanLife time.Duration, drops *atomic.Int64, opts ...kgo.Opt) {
	for ctx.Err() == nil {
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return
		}
		lctx, cancel := context.WithTimeout(ctx, randDuration(meanLife))
		for lctx.Err() == nil {
			cl.PollFetches(lctx)
		}
		cancel()
		cl.Close()
		if ctx.Err() == nil {
			drops.Add(1)
		}
	}
}

func randDuration(mean time.Duration) time.Duration {
	return time.Duration(rand.ExpFloat64() * float64(mean))
}

// readAll reads every partition of topic from its start to its end offset
// and counts each value.
func readAll(addr, topic string) (map[value]int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return nil, err
	}
	// A broker just restarted after a SIGKILL answers LEADER_NOT_AVAILABLE
	// until it holds its lease again: retry what Kafka calls retriable.
	var ends kadm.ListedOffsets
	for {
		ends, err = kadm.NewClient(cl).ListEndOffsets(ctx, topic)
		if err == nil {
			err = ends.Error()
		}
		if err == nil || !kerr.IsRetriable(err) || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	cl.Close()
	if err != nil {
		return nil, fmt.Errorf("list end offsets: %w", err)
	}
	want := make(map[int32]int64)
	offsets := make(map[int32]kgo.Offset)
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
			offsets[o.Partition] = kgo.NewOffset().At(0)
		}
	})
	stored := make(map[value]int)
	if len(want) == 0 {
		return stored, nil
	}
	cl, err = kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("read back %s: %d partitions not read to their end: %w", topic, len(want), err)
		}
		var ferr error
		fs.EachError(func(_ string, p int32, err error) { ferr = fmt.Errorf("read back %s/%d: %w", topic, p, err) })
		if ferr != nil {
			return nil, ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			v, ok := parseValue(r.Value)
			if !ok {
				ferr = fmt.Errorf("read back %s/%d offset %d: value %q was never produced", topic, r.Partition, r.Offset, r.Value)
			}
			stored[v]++
			if end, ok := want[r.Partition]; ok && r.Offset+1 >= end {
				delete(want, r.Partition)
			}
		})
		if ferr != nil {
			return nil, ferr
		}
	}
	return stored, nil
}

func verdictData(acked *valueSet, stored map[value]int) bool {
	var missing, dupAcked, dupOther, unacked int
	acked.mu.Lock()
	defer acked.mu.Unlock()
	for v := range acked.m {
		switch n := stored[v]; {
		case n == 0:
			missing++
		case n > 1:
			dupAcked++
		}
	}
	for v, n := range stored {
		if _, ok := acked.m[v]; !ok {
			unacked++
			if n > 1 {
				dupOther++
			}
		}
	}
	ok := missing == 0 && dupAcked == 0 && dupOther == 0
	fmt.Printf("soak: records: %d acknowledged, %d distinct stored; acknowledged missing %d, acknowledged stored twice or more %d; stored but not acknowledged (failed or cut off by a disconnect) %d, of them duplicated %d\n",
		len(acked.m), len(stored), missing, dupAcked, unacked, dupOther)
	fmt.Printf("soak: DATA %s\n", map[bool]string{true: "OK: every acknowledged record is stored exactly once", false: "FAILED"}[ok])
	return ok
}

// verdictRSS compares the broker's anonymous memory from life to life: each
// restart starts from scratch, so the peak of each life is compared with
// the first's. Flat means every later life peaks within 25% + 32 MiB of it.
// A leak of the size this broker once had (idle long polls: about 8 MiB/s)
// shows as hundreds of MiB per life.
func verdictRSS(samples []rssSample, killEvery time.Duration) bool {
	var lifePeaks []int64
	var peak int64
	for i, s := range samples {
		peak = max(peak, s.anon)
		if i == len(samples)-1 || samples[i+1].life < s.life {
			// A life sampled only at its start (the run ended) says nothing.
			if s.life >= killEvery/2 {
				lifePeaks = append(lifePeaks, peak)
			}
			peak = 0
		}
	}
	parts := make([]string, len(lifePeaks))
	for i, p := range lifePeaks {
		parts[i] = fmt.Sprintf("%.1f", mib(p))
	}
	fmt.Printf("soak: RssAnon peak per broker life (MiB): %s\n", strings.Join(parts, " "))
	if len(lifePeaks) < 2 {
		fmt.Printf("soak: RSS not judged: %d broker lives sampled, 2 needed (run at least 2 x --kill-every %v)\n", len(lifePeaks), killEvery)
		return true
	}
	base, worst := lifePeaks[0], int64(0)
	for _, p := range lifePeaks[1:] {
		worst = max(worst, p)
	}
	ok := worst <= base+base/4+32<<20
	fmt.Printf("soak: RSS %s\n", map[bool]string{true: "OK: flat", false: "FAILED: grows from life to life"}[ok])
	return ok
}

type rssSample struct {
	at, life    time.Duration
	anon, total int64
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// brokerProc is the broker child process.
type brokerProc struct {
	bin, dir, addr string
	admin          string
	cmd            *exec.Cmd
	started        time.Time
	exited         chan error
}

func (b *brokerProc) start() error {
	logf, err := os.OpenFile(filepath.Join(b.dir, "soak-broker.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(b.bin, "broker", "--data-dir", b.dir, "--listen", b.addr, "--admin", b.admin, "--flush", "sync", "--file-size", "64MiB", "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start broker: %w", err)
	}
	logf.Close()
	b.cmd, b.started, b.exited = cmd, time.Now(), make(chan error, 1)
	go func() { b.exited <- cmd.Wait() }()
	// Ready when it accepts connections.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		c, err := net.DialTimeout("tcp", b.addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case err := <-b.exited:
			return fmt.Errorf("broker exited at start (%v); see %s", err, filepath.Join(b.dir, "soak-broker.log"))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return errors.New("broker did not accept connections within 2 minutes")
		}
	}
}

func (b *brokerProc) kill() error {
	if err := b.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill broker: %w", err)
	}
	<-b.exited
	return nil
}

func (b *brokerProc) stop() {
	select {
	case <-b.exited:
		return
	default:
	}
	b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.exited:
	case <-time.After(time.Minute):
		b.kill()
	}
	b.exited <- nil // later stops return at once
}

// rss reads the child's memory from /proc.
func (b *brokerProc) rss() rssSample {
	s := rssSample{life: time.Since(b.started)}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", b.cmd.Process.Pid))
	if err != nil {
		return s
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "RssAnon":
			s.anon = kb << 10
		case "VmRSS":
			s.total = kb << 10
		}
	}
	return s
}

// metric is the value of an unlabelled metric on the broker's /metrics, or
// "?" when it cannot be read.
func (b *brokerProc) metric(name string) string {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + b.admin + "/metrics")
	if err != nil {
		return "?"
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 1<<20 {
				return fmt.Sprintf("%.1fMiB", f/(1<<20))
			}
			return v
		}
	}
	return "?"
}

// freeAddr picks a loopback port for the broker; it keeps the port across
// restarts so that clients reconnect to the same address.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
