package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/unilog/unilog/auth"
	"github.com/unilog/unilog/internal/poll"
	"github.com/unilog/unilog/internal/tlsconf/tlstest"
	"github.com/unilog/unilog/internal/txntest"
)

// secureCluster is two single-node replica groups whose Kafka listeners
// need TLS and a SCRAM login and apply an ACL.
type secureCluster struct {
	nodes           []*groupNode
	natsURL, secret string
	ca              *x509.CertPool
}

// startSecureCluster starts g1 (node 1) and g2 (node 2) with TLS, SASL and
// an ACL granting alice everything users can be granted and bob only
// consume on "other". --replication-tls-ca gives the CA the nodes verify
// each other's listeners with.
func startSecureCluster(t *testing.T) *secureCluster {
	t.Helper()
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "interbroker")
	cert, key := ca.Issue("node")
	users := filepath.Join(dir, "users")
	mustRun(t, "alice-pw\n", "user", "add", "--users", users, "alice")
	mustRun(t, "bob-pw\n", "user", "add", "--users", users, "bob")
	acl := filepath.Join(dir, "acl")
	writeFile(t, acl, "unilog-acl 1\nalice admin *\nalice produce *\nalice consume *\nalice group *\nalice transaction *\nbob consume other\n")
	nodes, natsURL, secret := startGroupNodesWith(t, []string{"--tls-cert", cert, "--tls-key", key,
		"--users", users, "--acl", acl, "--replication-tls-ca", ca.File}, "g1", "g2")
	return &secureCluster{nodes: nodes, natsURL: natsURL, secret: secret, ca: ca.Pool()}
}

// client is a client of both nodes logged in as user.
func (c *secureCluster) client(t *testing.T, user, password string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.nodes[0].addr, c.nodes[1].addr),
		kgo.DialTLSConfig(&tls.Config{RootCAs: c.ca, MinVersion: tls.VersionTLS12}),
		kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha512Mechanism()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(50 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond })}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestInterBrokerCalls: on a cluster whose listeners need TLS and SASL
// and apply an ACL, a partition moves from g1 to g2 under an acks=all
// producer, losing and duplicating nothing, and a transaction spanning
// both groups commits (its markers reach the other group as
// WriteTxnMarkers). The nodes reach each other's listeners with the
// inter-broker credentials; a user holding every grant the ACL gives
// users still may not write markers, and bob may not read what the
// copier reads.
func TestInterBrokerCalls(t *testing.T) {
	c := startSecureCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	alice := c.client(t, "alice", "alice-pw")
	adm := kadm.NewClient(alice)
	createTopicLedBy(ctx, t, adm, "moving", 2, 1)

	producer := startNumberedProducer(ctx, alice, "moving", 0)
	poll.True(t, "500 records acknowledged by g1", func() bool { return producer.count() >= 500 })
	mustRun(t, "", "topic", "move", "--nats", c.natsURL, "--cluster-secret-file", c.secret,
		"--topic", "moving", "--partition", "0", "--to-group", "g2", "--wait=false")
	poll.True(t, "moving/0 led by g2's node 2", func() bool { return leaderOf(ctx, adm, "moving", 0) == 2 })
	atMove := producer.count()
	poll.True(t, "500 more records acknowledged by g2", func() bool { return producer.count() >= atMove+500 })
	acked := producer.finish(t)
	var all []readRecord
	rd := c.client(t, "alice", "alice-pw", kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"moving": {0: kgo.NewOffset().AtStart()}}))
	for len(all) < len(acked) && ctx.Err() == nil {
		rd.PollFetches(ctx).EachRecord(func(r *kgo.Record) { all = append(all, readRecord{string(r.Value), r.Offset}) })
	}
	checkReadOnce(t, "read-back after the move", all, acked)
	t.Logf("%d records acknowledged, %d of them before the move switched; all read back once", len(acked), atMove)

	// One transaction over both groups' partitions commits, one aborts.
	if _, err := adm.CreateTopic(ctx, 2, -1, nil, "span"); err != nil {
		t.Fatal(err)
	}
	poll.True(t, "span's partitions led by both groups", func() bool {
		return leaderOf(ctx, adm, "span", 0) != leaderOf(ctx, adm, "span", 1) &&
			leaderOf(ctx, adm, "span", 0) > 0 && leaderOf(ctx, adm, "span", 1) > 0
	})
	txp := c.client(t, "alice", "alice-pw", kgo.TransactionalID("span-txn"))
	for i, commit := range []bool{true, false, true} {
		if err := txp.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for p := range int32(2) {
			if err := txp.ProduceSync(ctx, &kgo.Record{Topic: "span", Partition: p, Value: fmt.Appendf(nil, "txn%d-p%d", i, p)}).FirstErr(); err != nil {
				t.Fatalf("transaction %d, partition %d: %v", i, p, err)
			}
		}
		if err := txntest.End(ctx, txp, kgo.TransactionEndTry(commit), "span"); err != nil {
			t.Fatalf("end transaction %d: %v", i, err)
		}
	}
	want := map[string]bool{"txn0-p0": true, "txn0-p1": true, "txn2-p0": true, "txn2-p1": true}
	rc := c.client(t, "alice", "alice-pw", kgo.ConsumeTopics("span"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	seen := map[string]int{}
	for n := 0; n < len(want) && ctx.Err() == nil; {
		rc.PollFetches(ctx).EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++; n++ })
	}
	for v, n := range seen {
		if !want[v] || n != 1 {
			t.Errorf("read_committed read %q %d times; committed: %v", v, n, want[v])
		}
	}
	if len(seen) != len(want) {
		t.Errorf("read_committed read %v, want %v", seen, want)
	}

	// What the inter-broker calls may do, users may not: alice holds
	// admin on everything, yet writing markers is the cluster's.
	if code := writeMarker(ctx, t, alice, 2, "moving"); code != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("alice's WriteTxnMarkers answered %v, want CLUSTER_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}
	bob := c.client(t, "bob", "bob-pw")
	fetch := kmsg.NewPtrFetchRequest()
	fetch.ReplicaID, fetch.MaxBytes = -1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "moving"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LogStartOffset = 1<<20, -1, -1
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	fresp, err := fetch.RequestWith(ctx, bob.Broker(2))
	if err != nil {
		t.Fatal(err)
	}
	if code := fresp.Topics[0].Partitions[0].ErrorCode; code != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("bob's fetch of moving/0 answered %v, want TOPIC_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}
}

// TestUserAddRefusesInterBrokerUser: the nodes' own login cannot be added
// to a users file (a broker would shadow it anyway).
func TestUserAddRefusesInterBrokerUser(t *testing.T) {
	users := filepath.Join(t.TempDir(), "users")
	r := runCLI(t, "pw-pw-pw\n", "user", "add", "--users", users, auth.InterBrokerUser)
	if r.err == nil || !strings.Contains(r.err.Error(), "derived from the cluster secret") {
		t.Fatalf("user add %s: %v", auth.InterBrokerUser, r.err)
	}
}

// TestInterBrokerMutualTLS: on listeners with mutual TLS and no SASL the
// nodes present their own certificates to each other, so their common
// name is the principal the ACL must grant cluster: with that rule a
// partition moves; a user certificate granted everything else may not
// write transaction markers.
func TestInterBrokerMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "mtls")
	cert, key := ca.Issue("node")
	aliceCert, aliceKey := ca.Issue("alice")
	acl := filepath.Join(dir, "acl")
	writeFile(t, acl, "unilog-acl 1\nnode cluster *\nalice admin *\nalice produce *\nalice consume *\n")
	nodes, natsURL, secret := startGroupNodesWith(t, []string{"--tls-cert", cert, "--tls-key", key,
		"--tls-client-ca", ca.File, "--acl", acl, "--inter-broker-tls-ca", ca.File}, "g1", "g2")
	pool := ca.Pool()
	pair, err := tls.LoadX509KeyPair(aliceCert, aliceKey)
	if err != nil {
		t.Fatal(err)
	}
	aliceTLS := kgo.DialTLSConfig(&tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	alice := plainClient(t, nodes[0].addr, kgo.SeedBrokers(nodes[0].addr, nodes[1].addr), aliceTLS,
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(50*time.Millisecond))
	adm := kadm.NewClient(alice)
	createTopicLedBy(ctx, t, adm, "mtls", 1, 1)
	acked := map[string]int64{}
	for i := range 100 {
		r := &kgo.Record{Topic: "mtls", Partition: 0, Value: fmt.Appendf(nil, "%03d", i)}
		if err := alice.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		acked[string(r.Value)] = r.Offset
	}
	mustRun(t, "", "topic", "move", "--nats", natsURL, "--cluster-secret-file", secret,
		"--topic", "mtls", "--partition", "0", "--to-group", "g2", "--timeout", "30s")
	poll.True(t, "mtls/0 led by node 2", func() bool { return leaderOf(ctx, adm, "mtls", 0) == 2 })
	var all []readRecord
	rd := plainClient(t, nodes[1].addr, aliceTLS, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"mtls": {0: kgo.NewOffset().AtStart()}}))
	for len(all) < len(acked) && ctx.Err() == nil {
		rd.PollFetches(ctx).EachRecord(func(r *kgo.Record) { all = append(all, readRecord{string(r.Value), r.Offset}) })
	}
	checkReadOnce(t, "read-back from the target", all, acked)

	if code := writeMarker(ctx, t, alice, 2, "mtls"); code != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("alice's WriteTxnMarkers answered %v, want CLUSTER_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}
}

// writeMarker sends node a commit marker for producer 77 in topic's
// partition 0, as another group's coordinator would, and returns its
// answer's error code.
func writeMarker(ctx context.Context, t *testing.T, cl *kgo.Client, node int32, topic string) int16 {
	t.Helper()
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed = 77, 0, true
	m.Topics = []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: topic, Partitions: []int32{0}}}
	req.Markers = append(req.Markers, m)
	resp, err := req.RequestWith(ctx, cl.Broker(int(node)))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Markers[0].Topics[0].Partitions[0].ErrorCode
}

// createTopicLedBy creates topic through adm once both brokers are
// listed, and waits for node to lead its partition 0.
func createTopicLedBy(ctx context.Context, t *testing.T, adm *kadm.Client, topic string, partitions, node int32) {
	t.Helper()
	poll.True(t, "both brokers listed", func() bool {
		m, err := adm.BrokerMetadata(ctx)
		return err == nil && len(m.Brokers) == 2
	})
	if _, err := adm.CreateTopic(ctx, partitions, -1, nil, topic); err != nil {
		t.Fatal(err)
	}
	poll.True(t, fmt.Sprintf("%s/0 led by node %d", topic, node), func() bool { return leaderOf(ctx, adm, topic, 0) == node })
}
