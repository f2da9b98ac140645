package store

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/unilog/unilog/commitlog"
)

const (
	crashEnvDir   = "UNILOG_CRASH_DIR"
	crashEnvSeed  = "UNILOG_CRASH_SEED"
	crashEnvFirst = "UNILOG_CRASH_FIRST"
	crashEnvRound = "UNILOG_CRASH_ROUND"
	crashWriters  = 3
)

// crashOptions vary the checkpoints by round: every 10ms; never, so that
// recovery re-dispatches the whole log; or only after CheckpointBytes,
// taken while appends go on.
func crashOptions(dir string, round int) Options {
	opts := testOptions(dir)
	opts.CommitLog.FlushMode = commitlog.FlushSync
	switch round % 3 {
	case 1:
		opts.CheckpointInterval = time.Hour
		opts.CheckpointBytes = -1
	case 2:
		opts.CheckpointInterval = time.Hour
		opts.CheckpointBytes = 32 << 10
	}
	return opts
}

// TestHelperProcess is the child of TestCrashKill9: it appends generated
// messages in sync mode until it is killed, printing one ack line per
// message once WaitDurable has returned for it.
func TestHelperProcess(t *testing.T) {
	dir := os.Getenv(crashEnvDir)
	if dir == "" {
		t.Skip("run by TestCrashKill9 as its child process")
	}
	seed, err1 := strconv.ParseUint(os.Getenv(crashEnvSeed), 10, 64)
	first, err2 := strconv.Atoi(os.Getenv(crashEnvFirst))
	round, err3 := strconv.Atoi(os.Getenv(crashEnvRound))
	if err1 != nil || err2 != nil || err3 != nil {
		t.Fatalf("bad child environment: %v %v %v", err1, err2, err3)
	}
	d, err := Open(crashOptions(dir, round))
	if err != nil {
		t.Fatalf("child Open: %v", err)
	}
	var out sync.Mutex
	var wg sync.WaitGroup
	for w := range crashWriters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := first + w*3; ; i += crashWriters * 3 {
				// Batches of one to three messages, one index each.
				n := 1 + i%3
				ms := make([]commitlog.Message, n)
				for j := range ms {
					ms[j] = genMessage(seed, i+j)
				}
				ps, err := d.log.AppendBatch(ms)
				if err != nil {
					t.Errorf("child append: %v", err)
					return
				}
				if err := d.log.WaitDurable(context.Background(), ps[n-1].End()); err != nil {
					t.Errorf("child WaitDurable: %v", err)
					return
				}
				var b strings.Builder
				for j, m := range ms {
					fmt.Fprintf(&b, "ack %d %s %d %d %d %s\n", i+j, m.Topic, m.Partition, ps[j].QueueOffset, ps[j].PhysOffset,
						contentHash(m.Key, m.Headers, m.Body))
				}
				out.Lock()
				_, err = os.Stdout.WriteString(b.String())
				out.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
}

// crashAck is one acknowledged append as the child reported it.
type crashAck struct {
	index     int
	topic     string
	partition int32
	offset    int64
	phys      int64
	hash      string
}

func parseAck(line string) (crashAck, error) {
	var a crashAck
	_, err := fmt.Sscanf(line, "ack %d %s %d %d %d %s", &a.index, &a.topic, &a.partition, &a.offset, &a.phys, &a.hash)
	return a, err
}

// TestCrashKill9 kills a child appending in sync mode with SIGKILL at
// random moments, over and over on the same directory, and checks after
// every kill that each acknowledged record survived, readable through its
// consume queue with the same bytes, and that Verify passes. The rounds
// take turns at checkpointing often, never and by dispatched bytes
// (crashOptions), so recovery replays from a fresh checkpoint, from the
// parent's last Close, and from one taken under load.
func TestCrashKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test is long")
	}
	dir := t.TempDir()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	var acks []crashAck
	kills, recoveries := 0, 0
	began := time.Now()
	for round := 0; kills < 20 || (round < 40 && time.Since(began) < 25*time.Second); round++ {
		got := runCrashChild(t, dir, seed, round, rng)
		kills++
		// A kill during the child's start-up may come before it took the lock.
		if _, err := os.Stat(filepath.Join(dir, abortName)); err == nil {
			recoveries++
		}
		for _, a := range got {
			m := genMessage(seed, a.index)
			if a.topic != m.Topic || a.partition != m.Partition || a.hash != contentHash(m.Key, m.Headers, m.Body) {
				t.Fatalf("round %d: ack %+v does not match message %d", round, a, a.index)
			}
		}
		acks = append(acks, got...)

		d := mustOpen(t, crashOptions(dir, round))
		for _, a := range acks {
			m := genMessage(seed, a.index)
			for k := range int64(max(m.Count, 1)) {
				if err := readBack(d, a.topic, a.partition, a.offset+k, a.phys, a.hash); err != nil {
					d.Close()
					t.Fatalf("round %d (%d acks in all): acknowledged message %d lost: %v", round, len(acks), a.index, err)
				}
			}
		}
		if err := d.Close(); err != nil {
			t.Fatalf("round %d: Close: %v", round, err)
		}
		if err := Verify(dir); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	if kills < 20 || recoveries < kills/2 || len(acks) == 0 {
		t.Fatalf("%d kills, %d crash recoveries, %d acks: the child never got going", kills, recoveries, len(acks))
	}
	t.Logf("%d kills, %d crash recoveries, %d acknowledged messages, all survived", kills, recoveries, len(acks))
}

// runCrashChild starts a child for round, kills it at a random moment and
// returns the complete ack lines it printed.
func runCrashChild(t *testing.T, dir string, seed uint64, round int, rng *rand.Rand) []crashAck {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnvDir+"="+dir, crashEnvSeed+"="+strconv.FormatUint(seed, 10),
		crashEnvFirst+"="+strconv.Itoa(round*1_000_000), crashEnvRound+"="+strconv.Itoa(round))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1024)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		defer close(lines)
		r := bufio.NewReader(stdout)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				// A line without its newline was not fully acknowledged.
				io.Copy(io.Discard, r)
				return
			}
			lines <- line
		}
	}()
	var acks []crashAck
	take := func(line string) {
		if a, err := parseAck(line); err == nil {
			acks = append(acks, a)
		}
	}
	// Most kills land while appends are in full swing; some during start-up.
	if rng.IntN(4) != 0 {
		select {
		case line, ok := <-lines:
			if ok {
				take(line)
			}
		case <-time.After(20 * time.Second):
		}
	}
	timer := time.After(time.Duration(rng.IntN(150)) * time.Millisecond)
	exited := false
wait:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				exited = true
				break wait
			}
			take(line)
		case <-timer:
			break wait
		}
	}
	if !exited {
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatalf("kill: %v", err)
		}
	}
	for line := range lines {
		take(line)
	}
	<-readDone
	err = cmd.Wait()
	if exited {
		t.Fatalf("child exited by itself (%v); stderr:\n%s", err, stderr.String())
	}
	return acks
}
