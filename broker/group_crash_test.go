package broker

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/unilog/unilog/commitlog"
)

// crashChildEnv names the data directory of a broker run as a child
// process by TestGroupCommitCrash.
const crashChildEnv = "UNILOG_GROUP_CRASH_DIR"

// TestMain runs the crash test's child broker when asked to, instead of
// the tests.
func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		runCrashChild(dir)
		return
	}
	os.Exit(m.Run())
}

// runCrashChild serves a broker flushing synchronously until it is killed;
// its first line of output is its address.
func runCrashChild(dir string) {
	l := logrus.New()
	l.SetOutput(io.Discard)
	b, err := Start(Config{DataDir: dir, Listen: "127.0.0.1:0", FileSize: 8 << 20, Flush: commitlog.FlushSync, Logger: l})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(b.Addr())
	select {}
}

// TestGroupCommitCrash commits offsets under FlushSync to a broker child
// process, kills it with SIGKILL while commits are in flight and restarts
// on its directory: every acknowledged commit is there, and each commit's
// three partitions agree (none is torn).
func TestGroupCommitCrash(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child broker: %v\n%s", err, stderr.String())
	}
	addr = strings.TrimSpace(addr)
	cl := newClient(t, addr)
	createTopic(t, cl, "cr", 3)
	adm := kadm.NewClient(cl)

	var acked atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := int64(1); ; i++ {
			offs := kadm.Offsets{}
			for p := int32(0); p < 3; p++ {
				offs.Add(kadm.Offset{Topic: "cr", Partition: p, At: i, LeaderEpoch: -1})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			resp, err := adm.CommitOffsets(ctx, "gcr", offs)
			cancel()
			if err != nil || resp.Error() != nil {
				return
			}
			acked.Store(i)
		}
	}()
	eventually(t, "50 acknowledged commits", func() (bool, string) { return acked.Load() >= 50, fmt.Sprint(acked.Load()) })
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	cl.Close()
	<-done
	last := acked.Load()

	b := startBroker(t, groupConfig(t, dir))
	offs, err := kadm.NewClient(newClient(t, b.Addr())).FetchOffsets(testCtx(t), "gcr")
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 3; p++ {
		o, ok := offs.Lookup("cr", p)
		// The commit in flight at the kill may or may not have made it.
		if !ok || o.At < last || o.At > last+1 {
			t.Fatalf("partition %d committed %+v after the crash; last acknowledged %d", p, o, last)
		}
		if first, _ := offs.Lookup("cr", 0); o.At != first.At {
			t.Fatalf("torn commit: partition 0 at %d, partition %d at %d", first.At, p, o.At)
		}
	}
	o, _ := offs.Lookup("cr", 0)
	t.Logf("%d commits acknowledged before SIGKILL; recovered at %d", last, o.At)
}
