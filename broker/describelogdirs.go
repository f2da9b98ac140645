package broker

import (
	"context"
	"path/filepath"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"
)

// DescribeLogDirs: the data directory is the one log dir, holding every
// partition this node leads or stores. A partition's size is what its
// records take in the shared commit log (record headers included), from
// its log start to its stored end: the bytes it would free if the log
// were per partition, not a share of any file (files hold every
// partition's records). It is summed from the consume queue, one entry
// per offset, so a describe costs a read of each partition's index. The
// offset lag is 0: there are no future replicas to move a partition
// between dirs. v4 adds the file system's total and usable bytes; v5's
// cordoned dirs do not exist here.
func init() {
	register(kmsg.DescribeLogDirs, 0, 4, (*Broker).handleDescribeLogDirs, authorizeDescribeLogDirs)
}

// authorizeDescribeLogDirs: Kafka asks for Describe on the cluster; a
// principal without cluster admin gets no dirs (v3+: with
// CLUSTER_AUTHORIZATION_FAILED), as Kafka answers.
func authorizeDescribeLogDirs(z authz, req kmsg.Request) (kmsg.Response, error) {
	if z.b.clusterAdmin(z.p) {
		return z.run()
	}
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	return resp, nil
}

func (b *Broker) handleDescribeLogDirs(_ context.Context, _ *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = b.cfg.DataDir
	if abs, err := filepath.Abs(dir.Dir); err == nil {
		dir.Dir = abs
	}
	dir.TotalBytes, dir.UsableBytes = -1, -1
	var fs unix.Statfs_t
	if unix.Statfs(dir.Dir, &fs) == nil {
		dir.TotalBytes = int64(fs.Blocks) * int64(fs.Bsize)
		dir.UsableBytes = int64(fs.Bavail) * int64(fs.Bsize)
	}
	// A null list asks for every partition.
	asked := req.Topics
	if asked == nil {
		for _, t := range b.meta.Topics() {
			rt := kmsg.NewDescribeLogDirsRequestTopic()
			rt.Topic = t.Name
			for p := int32(0); p < t.Partitions; p++ {
				rt.Partitions = append(rt.Partitions, p)
			}
			asked = append(asked, rt)
		}
	}
	for _, t := range asked {
		meta, ok := b.meta.Topic(t.Topic)
		if !ok {
			continue // Kafka leaves out what the dir does not hold
		}
		rt := kmsg.NewDescribeLogDirsResponseDirTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			if p < 0 || p >= meta.Partitions {
				continue
			}
			lo, _, stored := b.visibleBounds(meta, p)
			if !b.leads(t.Topic, p) && stored == 0 {
				continue // another replica group's partition
			}
			rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			rp.Partition = p
			rp.Size = b.st.PartitionBytes(t.Topic, p, lo, stored)
			rt.Partitions = append(rt.Partitions, rp)
		}
		if len(rt.Partitions) > 0 {
			dir.Topics = append(dir.Topics, rt)
		}
	}
	resp.Dirs = append(resp.Dirs, dir)
	return resp, nil
}
