package controlplane

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/unilog/unilog/internal/testnet"
)

func TestLoadSecretCreatesOnePrivateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", SecretFileName)
	// Three nodes pointed at one path start together: one file, one secret.
	secrets := make([]*Secret, 3)
	var wg sync.WaitGroup
	for i := range secrets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := LoadSecret(path)
			if err != nil {
				t.Error(err)
			}
			secrets[i] = s
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for _, s := range secrets[1:] {
		if !bytes.Equal(s.key, secrets[0].key) {
			t.Fatal("nodes sharing a path read different secrets")
		}
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("secret file: %v, %v; want mode 0600", st.Mode(), err)
	}
	if len(secrets[0].key) != 64 {
		t.Errorf("generated secret of %d characters, want 64 hex digits", len(secrets[0].key))
	}
	leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*.tmp"))
	if len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
	again, err := LoadSecret(path)
	if err != nil || !bytes.Equal(again.key, secrets[0].key) {
		t.Fatalf("second load: %v, same key %v", err, err == nil && bytes.Equal(again.key, secrets[0].key))
	}
}

func TestLoadSecretRefusesUnsafeFiles(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		content string
		mode    os.FileMode
		want    string
	}{
		{"shared", strings.Repeat("a", 64), 0o640, "chmod 600"},
		{"short", "abc", 0o600, "at least 32"},
	} {
		path := filepath.Join(dir, tc.name)
		if err := os.WriteFile(path, []byte(tc.content), tc.mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(path, tc.mode)
		if _, err := LoadSecret(path); !errors.Is(err, ErrSecretFile) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrSecretFile saying %q", tc.name, err, tc.want)
		}
	}
}

func TestEmbeddedServerRefusesClientsWithoutTheSecret(t *testing.T) {
	secret := NewSecret([]byte("0123456789abcdef0123456789abcdef"))
	s, err := StartServer(ServerConfig{Name: "s", Dir: t.TempDir(), Listen: "127.0.0.1:0", Secret: secret, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	other := NewSecret([]byte("fedcba9876543210fedcba9876543210"))
	for name, cfg := range map[string]ConnConfig{
		"no credentials": {URLs: s.ClientURL()},
		"another secret": {URLs: s.ClientURL(), Secret: other},
	} {
		nc, err := nats.Connect(cfg.URLs, nats.MaxReconnects(0))
		if cfg.Secret != nil {
			nc, err = Dial(cfg)
		}
		if err == nil {
			nc.Close()
			t.Errorf("%s: connected", name)
		} else if !errors.Is(err, nats.ErrAuthorization) && !strings.Contains(err.Error(), "Authorization Violation") {
			t.Errorf("%s: %v, want an authorization violation", name, err)
		}
	}
	nc := dialConn(t, ConnConfig{URLs: s.ClientURL(), Secret: secret})
	if !nc.IsConnected() {
		t.Fatal("the secret's holder is not connected")
	}
}

func TestEmbeddedServerRefusesRoutesWithoutTheSecret(t *testing.T) {
	log, hook := test.NewNullLogger()
	secret := NewSecret([]byte("0123456789abcdef0123456789abcdef"))
	addr := testnet.FreeAddr(t)
	s, err := StartServer(ServerConfig{
		Name: "member", Dir: t.TempDir(), Listen: "127.0.0.1:0", Secret: secret,
		ClusterListen: addr, Routes: []string{"nats-route://" + addr}, Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	intruderAddr := testnet.FreeAddr(t)
	intruder, err := StartServer(ServerConfig{
		Name: "intruder", Dir: t.TempDir(), Listen: "127.0.0.1:0", Secret: NewSecret([]byte("fedcba9876543210fedcba9876543210")),
		ClusterListen: intruderAddr, Routes: []string{"nats-route://" + addr, "nats-route://" + intruderAddr}, Logger: quietLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(intruder.Shutdown)
	deadline := time.Now().Add(30 * time.Second)
	for !refusedRoute(hook) {
		if time.Now().After(deadline) {
			for _, e := range hook.AllEntries() {
				t.Log(e.Level, e.Message)
			}
			t.Fatal("the member logged no refused route")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := s.ns.NumRoutes(); n != 0 {
		t.Fatalf("member has %d routes, want none with the intruder", n)
	}
}

func refusedRoute(hook *test.Hook) bool {
	for _, e := range hook.AllEntries() {
		if e.Level <= logrus.WarnLevel && strings.Contains(e.Message, "authentication error") {
			return true
		}
	}
	return false
}

// TestDerivedKeysDiffer: each use of the secret gets a key of its own
// (none reveals another), the same on every node holding the secret and
// different under another secret.
func TestDerivedKeysDiffer(t *testing.T) {
	a := NewSecret([]byte(strings.Repeat("a", minSecretLen)))
	b := NewSecret([]byte(strings.Repeat("b", minSecretLen)))
	again := NewSecret([]byte(strings.Repeat("a", minSecretLen)))
	route, routePassword := a.routeUser()
	keys := map[string]string{
		"replication":    hex.EncodeToString(a.ReplicationKey()),
		"inter-broker":   a.InterBrokerPassword(),
		"route " + route: routePassword,
	}
	seen := map[string]string{}
	for use, key := range keys {
		if other, ok := seen[key]; ok {
			t.Errorf("%s and %s share a key", use, other)
		}
		seen[key] = use
	}
	if a.InterBrokerPassword() != again.InterBrokerPassword() {
		t.Error("one secret gave two inter-broker passwords")
	}
	if a.InterBrokerPassword() == b.InterBrokerPassword() {
		t.Error("two secrets gave one inter-broker password")
	}
}
