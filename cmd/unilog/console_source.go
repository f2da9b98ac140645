package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"

	"github.com/unilog/unilog/console"
	"github.com/unilog/unilog/ha/controlplane"
)

// consoleSource is the console's Source and Admin: a Kafka client to this
// broker, which like any client reaches each partition through its leader,
// and the control plane node for the cluster. It answers what `unilog
// topic describe`, `group describe` and `cluster status` print, through
// the same requests.
type consoleSource struct {
	// opts connect a client (seeds, TLS, SASL); Records adds its partition.
	opts    []kgo.Opt
	cl      *kgo.Client
	adm     *kadm.Client
	node    *controlplane.Node
	self    int32
	dataDir string
}

func (s *consoleSource) Cluster(ctx context.Context) (console.Cluster, error) {
	out := console.Cluster{Self: s.self, Disk: console.Disk{DataDir: s.dataDir}}
	var fs unix.Statfs_t
	if err := unix.Statfs(s.dataDir, &fs); err == nil {
		out.Disk.TotalBytes = fs.Blocks * uint64(fs.Bsize)
		out.Disk.FreeBytes = fs.Bavail * uint64(fs.Bsize)
	}
	st, err := s.node.Status(ctx)
	if err != nil {
		return out, fmt.Errorf("control plane status: %w", err)
	}
	leaders := map[string]controlplane.Member{}
	for _, l := range st.Leaders {
		for _, m := range st.Members {
			if m.NodeID == l.NodeID && m.ReplicaGroup == l.Group {
				leaders[l.Group] = m.Member
			}
		}
	}
	for _, m := range st.Members {
		n := console.Node{ID: m.NodeID, ReplicaGroup: m.ReplicaGroup, Role: m.Role, Epoch: m.Epoch,
			Advertise: m.Advertise, LogEnd: m.LogEndOffset, LagBytes: -1, HeartbeatAge: m.Age,
			Gone: m.Age >= controlplane.DefaultMemberDeadline}
		if l, ok := leaders[m.ReplicaGroup]; ok && l.NodeID != m.NodeID {
			n.LagBytes = max(0, l.LogEndOffset-m.LogEndOffset)
			n.InSync = slices.Contains(l.InSync, m.NodeID)
		}
		out.Nodes = append(out.Nodes, n)
	}
	for _, l := range st.Leaders {
		out.ReplicaGroups = append(out.ReplicaGroups, console.ReplicaGroup{Name: l.Group, Leader: l.NodeID, Epoch: l.Epoch, InSync: leaders[l.Group].InSync})
	}
	return out, nil
}

func (s *consoleSource) Topics(ctx context.Context, names ...string) ([]console.Topic, error) {
	td, err := s.adm.ListTopicsWithInternal(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	out := make([]console.Topic, 0, len(td))
	for _, t := range td {
		if t.Err != nil {
			continue // no such topic, or deleted between the listing and its metadata
		}
		out = append(out, console.Topic{Name: t.Topic, Partitions: int32(len(t.Partitions)), Internal: t.IsInternal})
	}
	return out, nil
}

// Partitions asks once for the metadata, twice for offsets (earliest and
// latest, each sharded by kgo to the leaders) and once for the sizes.
func (s *consoleSource) Partitions(ctx context.Context, want []console.TopicPartitions) ([]console.Partition, error) {
	names := make([]string, len(want))
	set := kadm.TopicsSet{}
	for i, w := range want {
		names[i] = w.Topic
		set.Add(w.Topic, w.Partitions...)
	}
	if len(want) == 0 {
		return nil, nil
	}
	td, err := s.adm.ListTopics(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	starts, err := s.listOffsets(ctx, want, -2)
	if err != nil {
		return nil, notFound(fmt.Errorf("log start offsets: %w", err))
	}
	ends, err := s.listOffsets(ctx, want, -1)
	if err != nil {
		return nil, notFound(fmt.Errorf("log end offsets: %w", err))
	}
	// Sizes need admin on the cluster; a console user without it shows
	// them as unknown.
	dirs, err := s.adm.DescribeAllLogDirs(ctx, set)
	if err != nil && !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		return nil, fmt.Errorf("log dirs: %w", err)
	}
	sizes := map[brokerPartition]int64{}
	dirs.Each(func(d kadm.DescribedLogDir) {
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			sizes[brokerPartition{p.Broker, p.Topic, p.Partition}] = p.Size
		})
	})
	var out []console.Partition
	for _, w := range want {
		for _, p := range w.Partitions {
			cp := console.Partition{Topic: w.Topic, ID: p, Leader: -1, Bytes: -1}
			if d, ok := td[w.Topic].Partitions[p]; ok {
				cp.Leader, cp.LeaderEpoch = d.Leader, d.LeaderEpoch
				if d.Err != nil {
					cp.Err = d.Err.Error()
				}
			} else {
				cp.Err = "no such partition"
			}
			if size, ok := sizes[brokerPartition{cp.Leader, w.Topic, p}]; ok {
				cp.Bytes = size
			}
			s, e := starts[topicPart{w.Topic, p}], ends[topicPart{w.Topic, p}]
			cp.Start, cp.End = s.offset, e.offset
			if err := errors.Join(s.err, e.err); err != nil && cp.Err == "" {
				cp.Err = err.Error()
			}
			out = append(out, cp)
		}
	}
	return out, nil
}

type brokerPartition struct {
	broker    int32
	topic     string
	partition int32
}

type topicPart struct {
	topic     string
	partition int32
}

type listedOffset struct {
	offset int64
	err    error
}

// listOffsets is one ListOffsets for the partitions of want at timestamp
// (-2 earliest, -1 latest, else the first record at or after it); kgo
// splits it by leader and merges the answers.
func (s *consoleSource) listOffsets(ctx context.Context, want []console.TopicPartitions, timestamp int64) (map[topicPart]listedOffset, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	for _, w := range want {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = w.Topic
		for _, p := range w.Partitions {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, timestamp, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	shards := s.cl.RequestSharded(ctx, req)
	out := map[topicPart]listedOffset{}
	for _, sh := range shards {
		if sh.Err != nil {
			return nil, sh.Err
		}
		for _, t := range sh.Resp.(*kmsg.ListOffsetsResponse).Topics {
			for _, p := range t.Partitions {
				out[topicPart{t.Topic, p.Partition}] = listedOffset{p.Offset, kerr.ErrorForCode(p.ErrorCode)}
			}
		}
	}
	return out, nil
}

// Records consumes from the partition's leader until q.Limit records, the
// end, or the request's deadline.
func (s *consoleSource) Records(ctx context.Context, q console.RecordQuery) ([]console.Record, error) {
	want := []console.TopicPartitions{{Topic: q.Topic, Partitions: []int32{q.Partition}}}
	key := topicPart{q.Topic, q.Partition}
	ends, err := s.listOffsets(ctx, want, -1)
	if err == nil {
		err = ends[key].err
	}
	if err != nil {
		return nil, notFound(fmt.Errorf("log end offset: %w", err))
	}
	from := q.Offset
	if q.AtMs >= 0 {
		at, err := s.listOffsets(ctx, want, q.AtMs)
		if err == nil {
			err = at[key].err
		}
		if err != nil {
			return nil, fmt.Errorf("offset for time %d: %w", q.AtMs, err)
		}
		from = at[key].offset
	}
	end := ends[key].offset
	if from < 0 || from >= end {
		return nil, nil
	}
	cl, err := kgo.NewClient(append(slices.Clip(s.opts),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{q.Topic: {q.Partition: kgo.NewOffset().At(from)}}))...)
	if err != nil {
		return nil, fmt.Errorf("consumer: %w", err)
	}
	defer cl.Close()
	// Control batches may end the log below end: give up on them after a
	// few seconds rather than at the request's deadline.
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var out []console.Record
	for len(out) < q.Limit {
		fs := cl.PollRecords(ctx, q.Limit-len(out))
		if ctx.Err() != nil {
			break
		}
		if err := fs.Err0(); err != nil {
			return out, fmt.Errorf("fetch: %w", err)
		}
		last := int64(-1)
		fs.EachRecord(func(r *kgo.Record) {
			rec := console.Record{Offset: r.Offset, Timestamp: r.Timestamp, Key: r.Key, Value: r.Value}
			for _, h := range r.Headers {
				rec.Headers = append(rec.Headers, console.Header{Key: h.Key, Value: h.Value})
			}
			out = append(out, rec)
			last = r.Offset
		})
		if last >= end-1 {
			break
		}
	}
	return out[:min(len(out), q.Limit)], nil
}

func (s *consoleSource) Groups(ctx context.Context) ([]console.GroupSummary, error) {
	listed, err := s.adm.ListGroups(ctx)
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	out := make([]console.GroupSummary, 0, len(listed))
	for _, g := range listed {
		out = append(out, console.GroupSummary{Name: g.Group, State: g.State, Protocol: g.ProtocolType})
	}
	return out, nil
}

// Describe is kadm's Lag, as `group describe` prints it.
func (s *consoleSource) Describe(ctx context.Context, groups []string) ([]console.Group, error) {
	if len(groups) == 0 {
		return nil, nil
	}
	lags, err := s.adm.Lag(ctx, groups...)
	if err != nil {
		return nil, fmt.Errorf("describe groups: %w", err)
	}
	out := make([]console.Group, 0, len(groups))
	for _, name := range groups {
		l, ok := lags[name]
		g := console.Group{Name: name}
		switch {
		case !ok:
			g.Err = "missing from the answer"
		case l.Error() != nil:
			g.Err = l.Error().Error()
		}
		if ok {
			g.State, g.TotalLag = l.State, l.Lag.Total()
			for _, m := range l.Members {
				cm := console.Member{ID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Assigned: map[string][]int32{}}
				if ca, ok := m.Assigned.AsConsumer(); ok {
					for _, t := range ca.Topics {
						cm.Assigned[t.Topic] = append(cm.Assigned[t.Topic], t.Partitions...)
					}
				}
				g.Members = append(g.Members, cm)
			}
			for _, pl := range l.Lag.Sorted() {
				row := console.PartitionLag{Topic: pl.Topic, Partition: pl.Partition, Committed: -1, End: pl.End.Offset, Lag: -1}
				if pl.Commit.At >= 0 {
					row.Committed = pl.Commit.At
				}
				if pl.Lag >= 0 {
					row.Lag = pl.Lag
				}
				if pl.Member != nil {
					row.Member = pl.Member.MemberID
				}
				g.Lag = append(g.Lag, row)
			}
		}
		out = append(out, g)
	}
	return out, nil
}

// notFound marks err console.NotFound when it says the partition is no
// partition of the cluster (kgo finds no leader for it).
func notFound(err error) error {
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return console.NotFound{Err: err}
	}
	return err
}

// refusedCodes are answers that the target's state caused, not a failure.
var refusedCodes = []error{kerr.TopicAlreadyExists, kerr.NonEmptyGroup, kerr.InvalidPartitions, kerr.UnknownTopicOrPartition, kerr.GroupIDNotFound}

// admErr returns err, marked console.Refused when the broker refused.
func admErr(err error) error {
	for _, code := range refusedCodes {
		if errors.Is(err, code) {
			return console.Refused{Err: err}
		}
	}
	return err
}

func (s *consoleSource) CreateTopic(ctx context.Context, name string, partitions int32) error {
	resp, err := s.adm.CreateTopic(ctx, partitions, -1, nil, name)
	if err == nil && resp.Err != nil {
		err = withErrMessage(resp.Err, resp.ErrMessage)
	}
	return admErr(err)
}

func (s *consoleSource) AddPartitions(ctx context.Context, topic string, total int32) error {
	resps, err := s.adm.UpdatePartitions(ctx, int(total), topic)
	if err == nil {
		err = resps.Error()
	}
	return admErr(err)
}

func (s *consoleSource) DeleteTopic(ctx context.Context, name string) error {
	resp, err := s.adm.DeleteTopic(ctx, name)
	if err == nil && resp.Err != nil {
		err = withErrMessage(resp.Err, resp.ErrMessage)
	}
	return admErr(err)
}

func (s *consoleSource) ResetGroup(ctx context.Context, group, topic, to string) ([]console.Reset, error) {
	isTime, ms, err := parseResetTo(to)
	if err != nil {
		return nil, console.Refused{Err: err}
	}
	resets, err := resetGroupOffsets(ctx, s.adm, group, topic, resetHow{to: to, isTime: isTime, ms: ms})
	if errors.Is(err, errGroupActive) {
		return nil, console.Refused{Err: err}
	}
	return resets, admErr(err)
}

func (s *consoleSource) DeleteGroup(ctx context.Context, name string) error {
	resp, err := s.adm.DeleteGroup(ctx, name)
	if err == nil {
		err = resp.Err
	}
	return admErr(err)
}
