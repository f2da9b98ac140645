package tlsconf

import (
	"crypto/tls"
	"io"
	"testing"

	"github.com/unilog/unilog/internal/tlsconf/tlstest"
)

// handshake dials a TLS server built from srv with a client built from cli
// and returns the server's view of the peer and both handshake errors.
func handshake(t *testing.T, srv *tls.Config, cli *tls.Config) (string, error, error) {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", srv)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type result struct {
		peer string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- result{err: err}
			return
		}
		defer c.Close()
		tc := c.(*tls.Conn)
		err = tc.Handshake()
		if err == nil {
			// One byte tells the client it was accepted; then wait for
			// it to close.
			tc.Write([]byte{1})
			io.Copy(io.Discard, tc)
		}
		done <- result{PeerName(tc.ConnectionState()), err}
	}()
	cli.ServerName = "localhost"
	c, err := tls.Dial("tcp", ln.Addr().String(), cli)
	if err == nil {
		// TLS 1.3 reports a refused client certificate on the first read.
		_, err = c.Read(make([]byte, 1))
		c.Close()
	}
	r := <-done
	return r.peer, r.err, err
}

func TestMutualTLS(t *testing.T) {
	ca := tlstest.NewCA(t, "test")
	other := tlstest.NewCA(t, "other")
	srvCert, srvKey := ca.Issue("broker-0")
	cliCert, cliKey := ca.Issue("alice")
	strCert, strKey := other.Issue("mallory")

	srv, err := Files{Cert: srvCert, Key: srvKey, ClientCA: ca.File}.Server()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		client   Files
		peer     string
		refused  bool
		restrict []string
	}{
		{"client certificate", Files{CA: ca.File, Cert: cliCert, Key: cliKey}, "alice", false, nil},
		{"no client certificate", Files{CA: ca.File}, "", true, nil},
		{"certificate from another CA", Files{CA: ca.File, Cert: strCert, Key: strKey}, "", true, nil},
		{"allowed peer", Files{CA: ca.File, Cert: cliCert, Key: cliKey}, "alice", false, []string{"alice", "bob"}},
		{"peer not in the list", Files{CA: ca.File, Cert: cliCert, Key: cliKey}, "", true, []string{"bob"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := srv.Clone()
			if tc.restrict != nil {
				s.VerifyConnection = RequirePeer(tc.restrict...)
			}
			cli, err := tc.client.Client(true)
			if err != nil {
				t.Fatal(err)
			}
			peer, serr, cerr := handshake(t, s, cli)
			if tc.refused {
				if serr == nil || cerr == nil {
					t.Fatalf("handshake accepted: server %v, client %v", serr, cerr)
				}
				return
			}
			if serr != nil || cerr != nil {
				t.Fatalf("handshake failed: server %v, client %v", serr, cerr)
			}
			if peer != tc.peer {
				t.Fatalf("peer %q, want %q", peer, tc.peer)
			}
		})
	}
}

func TestClientRefusesUnknownServer(t *testing.T) {
	ca := tlstest.NewCA(t, "test")
	other := tlstest.NewCA(t, "other")
	srvCert, srvKey := other.Issue("impostor")
	srv, err := Files{Cert: srvCert, Key: srvKey}.Server()
	if err != nil {
		t.Fatal(err)
	}
	cli, _ := Files{CA: ca.File}.Client(true)
	if _, _, cerr := handshake(t, srv, cli); cerr == nil {
		t.Fatal("client accepted a server certificate from an unknown CA")
	}
}

func TestFilesErrors(t *testing.T) {
	ca := tlstest.NewCA(t, "test")
	cert, key := ca.Issue("x")
	for _, tc := range []struct {
		name string
		f    Files
	}{
		{"cert without key", Files{Cert: cert}},
		{"client CA without cert", Files{ClientCA: ca.File}},
		{"missing CA file", Files{Cert: cert, Key: key, ClientCA: ca.File + ".missing"}},
		{"key is not a CA", Files{Cert: cert, Key: key, ClientCA: key}},
	} {
		if _, err := tc.f.Server(); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	if cfg, err := (Files{}).Server(); cfg != nil || err != nil {
		t.Fatalf("no files: %v %v, want plaintext", cfg, err)
	}
	if cfg, err := (Files{}).Client(false); cfg != nil || err != nil {
		t.Fatalf("no files, TLS off: %v %v", cfg, err)
	}
}
