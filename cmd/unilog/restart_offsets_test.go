package main

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRestartedLeaderServesNoStaleOffsets: a leader handed over and
// restarted loads the group offsets of its own term from its log; asked
// for them while it starts, before its role is known, it must answer
// NOT_COORDINATOR, never with them. The failover soak's admin client,
// pinned to that node as the coordinator it had cached, read a commit of
// the old term back while the new leader had acknowledged newer ones.
func TestRestartedLeaderServesNoStaleOffsets(t *testing.T) {
	g := startBrokerGroup(t, 3)
	const topic, group = "restart-offsets", "restart-group"
	g.createTopic(topic, 1)
	admCl, err := kgo.NewClient(kgo.SeedBrokers(g.seeds()...))
	if err != nil {
		t.Fatal(err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	// A commit retries what the client does not (a dial to the node
	// just stopped, its cached coordinator) for 30 s.
	commit := func(at int64) {
		t.Helper()
		offs := kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: at, LeaderEpoch: -1})
		deadline := time.Now().Add(30 * time.Second)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			resp, err := adm.CommitOffsets(ctx, group, offs)
			cancel()
			if err == nil {
				err = resp.Error()
			}
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("commit %d: %v", at, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	commit(1)
	// The window is milliseconds: several restarts make it likely that
	// one of them shows it.
	var stale, served atomic.Int64
	for round := int64(1); round <= 3; round++ {
		old, st := g.leader()
		g.stop(old)
		next := g.waitLeader(st.Epoch+1, old)
		commit(round + 1)

		// Ask the old leader directly, on a new connection each time,
		// as fast as it answers, while it starts.
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					if ok, offset := rawOffsetFetch(g.nodes[old].kafka, group, topic); ok {
						served.Add(1)
						if offset != round+1 {
							if stale.Add(1) <= 3 {
								t.Errorf("round %d: node %d, restarting after it led epoch %d, answered committed offset %d; the group's is %d",
									round, g.nodes[old].id, st.Epoch, offset, round+1)
							}
						}
					}
				}
			})
		}
		g.start(old)
		time.Sleep(time.Second)
		close(stop)
		wg.Wait()
		g.waitInSync(next)
	}
	t.Logf("%d offset fetches answered without error by the restarted nodes, %d stale", served.Load(), stale.Load())
}

// rawOffsetFetch asks addr, on a connection of its own, for group's
// committed offset of topic's partition 0 (OffsetFetch v8, with no
// ApiVersions first, as fast as a request can be made): ok is false when
// the node could not be reached or answered an error.
func rawOffsetFetch(addr, group, topic string) (ok bool, offset int64) {
	nc, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false, 0
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(2 * time.Second))
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 8
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	req.Groups = append(req.Groups, rg)
	buf := []byte{0, 0, 0, 0}
	buf = binary.BigEndian.AppendUint16(buf, uint16(req.Key()))
	buf = binary.BigEndian.AppendUint16(buf, uint16(req.Version))
	buf = binary.BigEndian.AppendUint32(buf, 1)
	buf = binary.BigEndian.AppendUint16(buf, 4)
	buf = append(buf, "test"...)
	buf = append(buf, 0) // no tags: OffsetFetch v8 is flexible
	buf = req.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	if _, err := nc.Write(buf); err != nil {
		return false, 0
	}
	var size [4]byte
	if _, err := io.ReadFull(nc, size[:]); err != nil {
		return false, 0
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(nc, body); err != nil || len(body) < 5 {
		return false, 0
	}
	r := kbin.Reader{Src: body[4:]}
	kmsg.SkipTags(&r)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	resp.SetVersion(req.Version)
	if err := resp.ReadFrom(r.Src); err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		return false, 0
	}
	for _, rt := range resp.Groups[0].Topics {
		for _, rp := range rt.Partitions {
			if rt.Topic == topic && rp.Partition == 0 && rp.ErrorCode == 0 {
				return true, rp.Offset
			}
		}
	}
	return true, -1
}
