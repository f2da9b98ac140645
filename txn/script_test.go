package txn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/internal/clock/clocktest"
	"github.com/unilog/unilog/internal/scripttest"
)

// TestScripts runs the transaction state-machine scripts in testdata/. A
// script is a sequence of commands, each followed by the lines it is
// expected to print, prefixed "> ". Producer ids are handed out from 1000;
// topics t, u and r have 4 partitions, others none; r is led by another
// replica group, so its markers also go through Options.Remote:
//
//	init id=T [timeout=60s] [pid=N epoch=E]
//	add id=T pid=N epoch=E parts=t/0,t/1
//	offsets id=T pid=N epoch=E group=G
//	txncommit id=T pid=N epoch=E group=G offsets=t/0:5,... [member=M gen=N]
//	end id=T pid=N epoch=E commit=true|false
//	describe id=T
//	list [states=Ongoing,...]
//	tick 70s
//	floor                   (the retention floor)
//	compact LIMIT           (rewrite the states whose records end at or before LIMIT)
//	crash-before-complete   (the next append without markers fails)
//	fail-decision           (the next append with markers fails)
//	restart                 (a new coordinator over the same log; its
//	                         first scan runs at the next tick)
//	remote-down, remote-up  (r's leader refuses markers, or takes them)
//
// Every append of markers prints a "markers ..." line, every group
// commit a "group ..." line, and every write of r's markers a "remote
// ..." line. Run with -rewrite to regenerate.
func TestScripts(t *testing.T) {
	scripttest.RunAll(t, "testdata/*.txt", func(t *testing.T) func(string) []string {
		out := new(strings.Builder)
		r := &scriptRunner{t: t, clock: clocktest.New(), log: &memLog{parts: make(map[int32][]Record), out: out}, ids: &memIDs{next: 1000}, out: out, remote: &memRemote{out: out}}
		r.open()
		t.Cleanup(func() { r.c.Close() })
		return r.run
	})
}

// memLog keeps records per partition; every append is durable at once,
// and ends one past the previous (a record count stands for the physical
// offset).
type memLog struct {
	mu    sync.Mutex
	parts map[int32][]Record
	end   int64
	out   *strings.Builder
	// failComplete fails the next append without markers, failDecision
	// the next with them, storing nothing.
	failComplete, failDecision bool
}

var errCrash = errors.New("crashed")

func (l *memLog) Append(_ context.Context, partition int32, rec Record, m *Markers) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m == nil && l.failComplete || m != nil && l.failDecision {
		l.failComplete, l.failDecision = false, false
		return 0, errCrash
	}
	l.parts[partition] = append(l.parts[partition], rec)
	l.end++
	if rec.Value == nil {
		id, _ := decodeKey(rec.Key)
		fmt.Fprintf(l.out, "tombstone %s\n", id)
	}
	if m != nil {
		var parts []string
		for _, p := range m.Partitions {
			parts = append(parts, fmt.Sprintf("%s/%d", p.Topic, p.Partition))
		}
		fmt.Fprintf(l.out, "markers commit=%v pid=%d epoch=%d %s\n", m.Commit, m.ProducerID, m.Epoch, strings.Join(parts, ","))
	}
	return l.end, nil
}

func (l *memLog) Replay(partition int32, fn func(Record) error) error {
	l.mu.Lock()
	recs := append([]Record(nil), l.parts[partition]...)
	l.mu.Unlock()
	for _, r := range recs {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// memGroups accepts member "m" at generation 1 of any group.
type memGroups struct{ out *strings.Builder }

func (g memGroups) CheckMember(_, member string, _ *string, gen int32) int16 {
	switch {
	case member != "m":
		return kerr.UnknownMemberID.Code
	case gen != 1:
		return kerr.IllegalGeneration.Code
	}
	return 0
}

func (g memGroups) Commit(_ context.Context, group string, offs []Offset) error {
	var s []string
	for _, o := range offs {
		s = append(s, fmt.Sprintf("%s/%d:%d", o.Topic, o.Partition, o.Offset))
	}
	sort.Strings(s)
	fmt.Fprintf(g.out, "group %s committed %s\n", group, strings.Join(s, ","))
	return nil
}

// memRemote is the leader of topic r's partitions in another replica
// group; while down, it is unreachable until the caller gives up.
type memRemote struct {
	out  *strings.Builder
	down bool
}

func (m *memRemote) WriteMarkers(_ context.Context, mk Markers) error {
	var parts []string
	for _, p := range mk.Partitions {
		if p.Topic == "r" {
			parts = append(parts, fmt.Sprintf("%s/%d", p.Topic, p.Partition))
		}
	}
	if len(parts) == 0 {
		return nil
	}
	if m.down {
		fmt.Fprintf(m.out, "remote down: %s\n", strings.Join(parts, ","))
		return fmt.Errorf("leader of %s: %w", strings.Join(parts, ","), context.DeadlineExceeded)
	}
	fmt.Fprintf(m.out, "remote commit=%v pid=%d epoch=%d %s\n", mk.Commit, mk.ProducerID, mk.Epoch, strings.Join(parts, ","))
	return nil
}

type memIDs struct{ next int64 }

func (m *memIDs) Allocate() (int64, error) { m.next++; return m.next - 1, nil }

type scriptRunner struct {
	t      *testing.T
	clock  *clocktest.Fake
	log    *memLog
	ids    *memIDs
	out    *strings.Builder
	remote *memRemote
	c      *Coordinator
}

func (r *scriptRunner) open() {
	logger := logrus.New()
	logger.SetOutput(io.Discard)
	c, err := Open(Options{Log: r.log, Groups: memGroups{r.out}, IDs: r.ids, Remote: r.remote, Partitions: 3, Clock: r.clock, Logger: logger})
	if err != nil {
		r.t.Fatal(err)
	}
	r.c = c
}

func errName(code int16) string {
	if code == 0 {
		return "OK"
	}
	return kerr.ErrorForCode(code).(*kerr.Error).Message
}

// run runs one command and returns what it printed, the log's and the
// groups' lines included.
func (r *scriptRunner) run(line string) []string {
	r.out.Reset()
	r.exec(line)
	if out := strings.TrimRight(r.out.String(), "\n"); out != "" {
		return strings.Split(out, "\n")
	}
	return nil
}

func (r *scriptRunner) exec(line string) {
	f := strings.Fields(line)
	args := make(map[string]string)
	for _, kv := range f[1:] {
		k, v, _ := strings.Cut(kv, "=")
		args[k] = v
	}
	num := func(k string, def int64) int64 {
		v, ok := args[k]
		if !ok {
			return def
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			r.t.Fatalf("%s: %s=%q: %v", line, k, v, err)
		}
		return n
	}
	ctx := context.Background()
	id := args["id"]
	pid, epoch := num("pid", -1), int16(num("epoch", -1))
	exists := func(topic string, p int32) bool {
		return (topic == "t" || topic == "u" || topic == "r") && p >= 0 && p < 4
	}
	switch f[0] {
	case "init":
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version = 4
		req.TransactionalID = &id
		timeout := 60 * time.Second
		if v, ok := args["timeout"]; ok {
			timeout, _ = time.ParseDuration(v)
		}
		req.TransactionTimeoutMillis = int32(timeout.Milliseconds())
		req.ProducerID, req.ProducerEpoch = pid, epoch
		resp := r.c.InitProducerID(ctx, req)
		fmt.Fprintf(r.out, "init: %s pid=%d epoch=%d\n", errName(resp.ErrorCode), resp.ProducerID, resp.ProducerEpoch)
	case "add":
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version = 3
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
		for _, tp := range strings.Split(args["parts"], ",") {
			topic, p, _ := strings.Cut(tp, "/")
			n, _ := strconv.Atoi(p)
			if k := len(req.Topics); k == 0 || req.Topics[k-1].Topic != topic {
				rt := kmsg.NewAddPartitionsToTxnRequestTopic()
				rt.Topic = topic
				req.Topics = append(req.Topics, rt)
			}
			req.Topics[len(req.Topics)-1].Partitions = append(req.Topics[len(req.Topics)-1].Partitions, int32(n))
		}
		resp := r.c.AddPartitionsToTxn(ctx, req, exists)
		var s []string
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				s = append(s, fmt.Sprintf("%s/%d=%s", rt.Topic, rp.Partition, errName(rp.ErrorCode)))
			}
		}
		fmt.Fprintf(r.out, "add: %s\n", strings.Join(s, " "))
	case "offsets":
		req := kmsg.NewPtrAddOffsetsToTxnRequest()
		req.Version = 3
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = id, pid, epoch, args["group"]
		fmt.Fprintf(r.out, "offsets: %s\n", errName(r.c.AddOffsetsToTxn(ctx, req).ErrorCode))
	case "txncommit":
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version = 3
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = id, pid, epoch, args["group"]
		req.MemberID, req.Generation = args["member"], int32(num("gen", -1))
		for _, o := range strings.Split(args["offsets"], ",") {
			tp, off, _ := strings.Cut(o, ":")
			topic, p, _ := strings.Cut(tp, "/")
			n, _ := strconv.Atoi(p)
			v, _ := strconv.ParseInt(off, 10, 64)
			rt := kmsg.NewTxnOffsetCommitRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = int32(n), v
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		resp := r.c.TxnOffsetCommit(ctx, req)
		fmt.Fprintf(r.out, "txncommit: %s\n", errName(resp.Topics[0].Partitions[0].ErrorCode))
	case "end":
		req := kmsg.NewPtrEndTxnRequest()
		req.Version = 3
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, args["commit"] == "true"
		fmt.Fprintf(r.out, "end: %s\n", errName(r.c.EndTxn(ctx, req).ErrorCode))
	case "describe":
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = []string{id}
		rs := r.c.DescribeTransactions(req).TransactionStates[0]
		var parts []string
		for _, rt := range rs.Topics {
			for _, p := range rt.Partitions {
				parts = append(parts, fmt.Sprintf("%s/%d", rt.Topic, p))
			}
		}
		fmt.Fprintf(r.out, "describe: %s state=%s pid=%d epoch=%d partitions=[%s]\n", errName(rs.ErrorCode), rs.State, rs.ProducerID, rs.ProducerEpoch, strings.Join(parts, ","))
	case "list":
		req := kmsg.NewPtrListTransactionsRequest()
		if v, ok := args["states"]; ok {
			req.StateFilters = strings.Split(v, ",")
		}
		resp := r.c.ListTransactions(req)
		for _, s := range resp.TransactionStates {
			fmt.Fprintf(r.out, "list: %s pid=%d %s\n", s.TransactionalID, s.ProducerID, s.TransactionState)
		}
		if len(resp.UnknownStateFilters) > 0 {
			fmt.Fprintf(r.out, "list: unknown states %v\n", resp.UnknownStateFilters)
		}
	case "tick":
		d, err := time.ParseDuration(f[1])
		if err != nil {
			r.t.Fatal(err)
		}
		// The fake clock runs the due timeout scan before it returns.
		r.clock.Advance(d)
	case "floor":
		fmt.Fprintf(r.out, "floor: %d (log end %d)\n", r.c.RetentionFloor(), r.log.end)
	case "compact":
		limit, _ := strconv.ParseInt(f[1], 10, 64)
		n, err := r.c.Compact(ctx, limit)
		fmt.Fprintf(r.out, "compact: %d rewritten, %v\n", n, err)
	case "crash-before-complete":
		r.log.failComplete = true
	case "fail-decision":
		r.log.failDecision = true
	case "restart":
		r.c.Close()
		r.open()
	case "remote-down", "remote-up":
		r.remote.down = f[0] == "remote-down"
	default:
		r.t.Fatalf("unknown command %q", line)
	}
}
