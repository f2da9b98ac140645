package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/unilog/unilog/ha/controlplane"
	"github.com/unilog/unilog/internal/poll"
	"github.com/unilog/unilog/internal/testnet"
	"github.com/unilog/unilog/internal/tlsconf/tlstest"
)

// TestReplicationTLS runs one replica group with the replication stream
// over mutual TLS: a node whose certificate the leader accepts becomes an
// in-sync follower; one whose name is not among --replication-peers never
// does.
func TestReplicationTLS(t *testing.T) {
	srv, err := controlplane.StartServer(controlplane.ServerConfig{Name: "replication-tls-test", Dir: t.TempDir(), Listen: "127.0.0.1:0", Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	// After the brokers (cleanups run last first): a broker stopping without
	// its control plane waits out its NATS calls before it exits.
	t.Cleanup(srv.Shutdown)
	ca := tlstest.NewCA(t, "cluster")
	base := t.TempDir()
	start := func(id int, cn string) *brokerProcess {
		cert, key := ca.Issue(cn)
		p := &brokerProcess{id: id, dir: filepath.Join(base, fmt.Sprintf("n%d", id))}
		p.args = []string{"--data-dir", p.dir, "--node-id", fmt.Sprint(id), "--nats", srv.ClientURL(),
			"--listen", testnet.FreeAddr(t), "--admin", testnet.FreeAddr(t), "--replication-listen", testnet.FreeAddr(t),
			"--file-size", "8MiB", "--lease-duration", "2s",
			"--tls-cert", cert, "--tls-key", key, "--replication-tls-ca", ca.File, "--replication-peers", "node-1,node-2"}
		startBrokerProcess(t, p)
		t.Cleanup(func() {
			p.cmd.Process.Signal(syscall.SIGTERM)
			<-p.exit
		})
		return p
	}
	first := start(1, "node-1")
	waitLeader(t, []*brokerProcess{first}, 1, 0)
	second := start(2, "node-2")
	waitLeader(t, []*brokerProcess{first, second}, 1, 1)

	stranger := start(3, "stranger")
	// The stranger keeps trying; the leader's in-sync set never gains it.
	poll.True(t, "the stranger's refused sessions in its log", func() bool {
		log, _ := os.ReadFile(stranger.dir + ".log")
		return bytes.Contains(log, []byte("replication session ended"))
	})
	if st := mustStatus(t, first); len(st.InSync) != 1 {
		t.Fatalf("leader's in-sync set %v, want node 2 alone", st.InSync)
	}
}
