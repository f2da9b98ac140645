package broker

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/unilog/unilog/commitlog"
	"github.com/unilog/unilog/internal/fileops"
	"github.com/unilog/unilog/internal/fileops/fileopstest"
	"github.com/unilog/unilog/internal/txntest"
)

// The workload of TestTxnPowerCut: pcProducers transactional producers,
// each ending pcTxns transactions of pcRecords records spread over the
// topic's pcPartitions partitions, every third one aborted.
const (
	pcTopic      = "pc"
	pcPartitions = 4
	pcProducers  = 2
	pcTxns       = 16
	pcTxnsMax    = 16 * pcTxns // a run cutting by step goes on to at most this
	pcRecords    = 8
)

// pcCommits says whether transaction n of a producer commits; transaction
// 0 is the warm-up, made durable before any cut.
func pcCommits(n int) bool { return n%3 != 2 }

// powerCut is the data directory's fileops.Ops in TestTxnPowerCut: a
// Recorder that cuts the power (Freeze) just before the at-th durability
// call (msync, fdatasync, directory sync, syncfs) after arm; at 0 never.
// The broker runs on unaware; what the recorder kept is the disk after
// the cut.
type powerCut struct {
	*fileopstest.Recorder
	at int64

	mu    sync.Mutex // orders the count with Freeze: no later call is recorded
	armed bool
	n     int64
}

func (p *powerCut) arm() {
	p.mu.Lock()
	p.armed = true
	p.mu.Unlock()
}

// steps is how many durability calls were made since arm.
func (p *powerCut) steps() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

func (p *powerCut) step() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.armed {
		return
	}
	if p.n++; p.n == p.at {
		p.Recorder.Freeze()
	}
}

func (p *powerCut) Msync(path string, b []byte, off int64) error {
	p.step()
	return p.Recorder.Msync(path, b, off)
}

func (p *powerCut) Fdatasync(f *os.File) error {
	p.step()
	return p.Recorder.Fdatasync(f)
}

func (p *powerCut) SyncDir(dir string) error {
	p.step()
	return p.Recorder.SyncDir(dir)
}

func (p *powerCut) Syncfs(dir string) error {
	p.step()
	return p.Recorder.Syncfs(dir)
}

// endTxnCut cuts the power in the middle of the nth EndTxn (counted from
// arm) that the coordinator carries out: "before-decision", before the
// append of its decision and markers; "after-decision", right after that
// append, before the broker waits for it to be flushed; "before-complete",
// before the next state record of the same state partition, which is the
// Complete record (under FlushSync the decision is durable by then).
type endTxnCut struct {
	Storage
	at    string
	nth   int32
	cut   func()
	armed atomic.Bool

	decisions atomic.Int32
	decided   atomic.Int32 // state partition + 1 of the nth decision, once appended
}

func (s *endTxnCut) Append(dst []Appended, batches []StorageBatch) ([]Appended, error) {
	if !s.armed.Load() || len(batches) == 0 || batches[0].Topic != txnStateTopic {
		return s.Storage.Append(dst, batches)
	}
	statePart := batches[0].Partition
	if len(batches) == 1 { // a state record without markers
		if s.at == "before-complete" && s.decided.CompareAndSwap(statePart+1, 0) {
			s.cut()
		}
		return s.Storage.Append(dst, batches)
	}
	nth := s.decisions.Add(1) == s.nth
	if nth && s.at == "before-decision" {
		s.cut()
	}
	out, err := s.Storage.Append(dst, batches)
	if nth && s.at == "after-decision" {
		s.cut()
	}
	if nth && err == nil {
		s.decided.Store(statePart + 1)
	}
	return out, err
}

// pcTxn is what a producer learnt of one of its transactions.
type pcTxn struct {
	commit bool
	acked  bool // EndTxn answered before the cut
}

// TestTxnPowerCut cuts the power (below the page cache: only what the
// data directory's syncs made durable survives, fileopstest.Recorder)
// under transactional producers committing and aborting over several
// partitions, reopens a broker on what is left and reads it with
// read_committed. Every transaction must be all or nothing; none aborted
// may show; under FlushSync every commit answered before the cut must
// show. The cuts: after the workload, in the middle of an EndTxn (see
// endTxnCut), and just before durability calls spread over the workload.
//
// The broker's own small files (topic metadata, producer-id reservations,
// snapshots) go through the same recorder (Open hands the store's FS to
// the broker). The warm-up (the topic, each producer's id and a first
// transaction) is made durable whole (Syncfs) before the cut is armed, so
// that every cut falls in the workload.
func TestTxnPowerCut(t *testing.T) {
	for _, mode := range []struct {
		name  string
		flush commitlog.FlushMode
	}{{"sync", commitlog.FlushSync}, {"async", commitlog.FlushAsync}} {
		t.Run(mode.name, func(t *testing.T) {
			var total int64
			t.Run("after-workload", func(t *testing.T) {
				total = runTxnPowerCut(t, mode.flush, 0, "")
			})
			for _, at := range []string{"before-decision", "after-decision", "before-complete"} {
				t.Run(at, func(t *testing.T) { runTxnPowerCut(t, mode.flush, 0, at) })
			}
			// Async flushes few times in so short a workload, and how
			// many varies with the machine's timing (2 to 17 seen): the
			// cuts spread over at least cuts+1 steps, and a run whose
			// workload ends first goes on until its cut.
			const cuts = 3
			steps := max(total, cuts+1)
			for i := int64(1); i <= cuts; i++ {
				step := steps * i / (cuts + 1)
				t.Run(fmt.Sprintf("step-%d-of-%d", step, total), func(t *testing.T) { runTxnPowerCut(t, mode.flush, step, "") })
			}
		})
	}
}

// runTxnPowerCut runs the workload on a broker whose data directory is
// behind a powerCut (cutting at step, or in the EndTxn endTxn names, or
// after the workload), checks what a broker reopened on the image shows,
// and returns how many durability calls the workload made.
func runTxnPowerCut(t *testing.T, flush commitlog.FlushMode, step int64, endTxn string) int64 {
	dir := t.TempDir()
	pc := &powerCut{Recorder: fileopstest.NewRecorder(fileops.OS{}, dir), at: step}
	opts := testStore()
	// Small files: the recorder copies a whole file at each fdatasync.
	opts.CommitLog.FileSize = 256 << 10
	opts.CommitLog.FlushMode = flush
	// Async flushes often, so that the cuts by step fall between flushes
	// of the workload's transactions.
	opts.CommitLog.FlushInterval = time.Millisecond
	opts.FS = pc
	var wrap func(Storage) Storage
	var cutter *endTxnCut
	if endTxn != "" {
		wrap = func(st Storage) Storage {
			cutter = &endTxnCut{Storage: st, at: endTxn, nth: 3, cut: pc.Freeze}
			return cutter
		}
	}
	b, err := open(testConfig(t, dir), opts, wrap)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cl := newClient(t, b.Addr())
	createTopic(t, cl, pcTopic, pcPartitions)

	ctx := testCtx(t)
	producers := make([]*kgo.Client, pcProducers)
	outcomes := make([][]pcTxn, pcProducers)
	for p := range producers {
		producers[p] = newClient(t, b.Addr(), kgo.TransactionalID(fmt.Sprintf("pc-%d", p)), kgo.TransactionTimeout(3*time.Second))
		outcomes[p] = []pcTxn{pcTransact(ctx, t, producers[p], p, 0, pc)}
	}
	if err := pc.Syncfs(dir); err != nil {
		t.Fatal(err)
	}
	pc.arm()
	if cutter != nil {
		cutter.armed.Store(true)
	}

	var wg sync.WaitGroup
	for p, pr := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 1; n < pcTxns; n++ {
				outcomes[p] = append(outcomes[p], pcTransact(ctx, t, pr, p, n, pc))
			}
		}()
	}
	wg.Wait()
	total := pc.steps()
	// Flushes vary from run to run: a workload that ended before its cut
	// by step goes on, one transaction of each producer at a time, until
	// the cut, so that every such run cuts where it says.
	for n := pcTxns; step > 0 && !pc.Frozen(); n++ {
		if n == pcTxnsMax {
			t.Fatalf("no cut at durability call %d after %d transactions of each producer (%d calls)", step, n, pc.steps())
		}
		for p, pr := range producers {
			outcomes[p] = append(outcomes[p], pcTransact(ctx, t, pr, p, n, pc))
		}
	}
	if cutter != nil && !pc.Frozen() {
		t.Fatalf("the workload ended before the EndTxn cut %q", endTxn)
	}
	img := t.TempDir()
	if err := pc.Image(img, false, uint64(step)); err != nil {
		t.Fatal(err)
	}
	for _, pr := range producers {
		pr.Close()
	}
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	reopened := testStore()
	reopened.CommitLog.FlushMode = flush
	checkTxnPowerCut(t, startBrokerWith(t, testConfig(t, img), reopened).Addr(), flush, outcomes)
	return total
}

// pcTransact runs transaction n of producer p and reports it: acked if
// EndTxn was answered before cut.
func pcTransact(ctx context.Context, t *testing.T, pr *kgo.Client, p, n int, cut *powerCut) pcTxn {
	if err := pr.BeginTransaction(); err != nil {
		t.Errorf("producer %d transaction %d: begin: %v", p, n, err)
		return pcTxn{}
	}
	for r := range pcRecords {
		pr.Produce(ctx, &kgo.Record{Topic: pcTopic, Partition: int32(r % pcPartitions), Value: fmt.Appendf(nil, "%d/%d/%d", p, n, r)}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("producer %d transaction %d record %d: %v", p, n, r, err)
			}
		})
	}
	if err := pr.Flush(ctx); err != nil {
		t.Errorf("producer %d transaction %d: flush: %v", p, n, err)
	}
	commit := pcCommits(n)
	if err := txntest.End(ctx, pr, kgo.TransactionEndTry(commit), pcTopic); err != nil {
		t.Errorf("producer %d transaction %d: end (commit %v): %v", p, n, commit, err)
		return pcTxn{commit: commit}
	}
	return pcTxn{commit: commit, acked: !cut.Frozen()}
}

// checkTxnPowerCut reads every partition with read_committed up to a
// record produced after the reopening (which read_committed reaches only
// once every transaction before it has ended: the coordinator finishes
// the decided ones and aborts the others at their timeout) and checks each
// transaction of outcomes.
func checkTxnPowerCut(t *testing.T, addr string, flush commitlog.FlushMode, outcomes [][]pcTxn) {
	ctx := testCtx(t)
	end := newClient(t, addr)
	for p := range int32(pcPartitions) {
		if err := end.ProduceSync(ctx, &kgo.Record{Topic: pcTopic, Partition: p, Value: []byte("end")}).FirstErr(); err != nil {
			t.Fatalf("produce after reopening: %v", err)
		}
	}
	cl := newClient(t, addr, kgo.ConsumeTopics(pcTopic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200*time.Millisecond), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	seen := make(map[string]int)
	for ends := 0; ends < pcPartitions; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read_committed reached %d of %d partitions' ends: %v", ends, pcPartitions, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		for _, r := range fs.Records() {
			if v := string(r.Value); v == "end" {
				ends++
			} else {
				seen[v]++
			}
		}
	}
	visible := make([][]int, pcProducers)
	for p := range visible {
		visible[p] = make([]int, len(outcomes[p]))
	}
	for v, k := range seen {
		var p, n, r int
		if _, err := fmt.Sscanf(v, "%d/%d/%d", &p, &n, &r); err != nil || p < 0 || p >= pcProducers || n < 0 || n >= len(visible[p]) {
			t.Errorf("read_committed returned %q, not a record of the workload", v)
			continue
		}
		if k != 1 {
			t.Errorf("record %s seen %d times", v, k)
		}
		visible[p][n]++
	}
	var report []string
	for p, txns := range outcomes {
		for n, o := range txns {
			got := visible[p][n]
			report = append(report, fmt.Sprintf("%d/%d commit=%v acked=%v visible=%d", p, n, o.commit, o.acked, got))
			switch {
			case got != 0 && got != pcRecords:
				t.Errorf("producer %d transaction %d: %d of its %d records visible to read_committed", p, n, got, pcRecords)
			case !o.commit && got != 0:
				t.Errorf("producer %d transaction %d: aborted, yet visible to read_committed", p, n)
			case o.commit && o.acked && got == 0 && (n == 0 || flush == commitlog.FlushSync):
				t.Errorf("producer %d transaction %d: commit answered before the cut, lost", p, n)
			}
		}
	}
	if t.Failed() {
		t.Logf("transactions: %s", strings.Join(report, "; "))
	}
}
