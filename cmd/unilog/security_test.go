package main

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/unilog/unilog/auth"
	"github.com/unilog/unilog/internal/poll"
	"github.com/unilog/unilog/internal/tlsconf/tlstest"
)

func TestUserCommand(t *testing.T) {
	users := filepath.Join(t.TempDir(), "users")
	mustRun(t, "alice-pw\n", "user", "add", "--users", users, "alice")
	mustRun(t, "", "user", "add", "--users", users, "--password", "bob-pw", "--mechanisms", "SCRAM-SHA-512", "--iterations", "4096", "bob")
	if out := mustRun(t, "", "user", "list", "--users", users).stdout; out != "alice\tSCRAM-SHA-256,SCRAM-SHA-512\nbob\tSCRAM-SHA-512\n" {
		t.Fatalf("user list:\n%s", out)
	}
	data, err := os.ReadFile(users)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "alice-pw") || strings.Contains(string(data), "bob-pw") {
		t.Fatal("users file holds a clear password")
	}
	u, err := auth.LoadUsers(users)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := u.Credential("alice", auth.ScramSHA256); !ok || !c.VerifyPassword("alice-pw") || c.VerifyPassword("bob-pw") {
		t.Fatal("alice's stored credential does not verify her password")
	}
	mustRun(t, "", "user", "delete", "--users", users, "alice")
	if out := mustRun(t, "", "user", "list", "--users", users).stdout; out != "bob\tSCRAM-SHA-512\n" {
		t.Fatalf("after delete:\n%s", out)
	}
	for _, tc := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"", []string{"user", "delete", "--users", users, "alice"}, "no user"},
		{"pw\n", []string{"user", "add", "--users", users, "a b"}, "white space"},
		{"\n", []string{"user", "add", "--users", users, "carol"}, "empty password"},
		{"pw\n", []string{"user", "add", "--users", users, "--mechanisms", "MD5", "carol"}, "unsupported SASL mechanism"},
		{"pw\n", []string{"user", "add", "--users", users, "--iterations", "10", "carol"}, "iterations"},
		{"pw\n", []string{"user", "add", "--users", users}, "exactly one user"},
	} {
		if r := runCLI(t, tc.stdin, tc.args...); r.err == nil || !strings.Contains(r.err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error containing %q", tc.args, r.err, tc.want)
		}
	}
}

// TestSecuredBrokerCommands runs `unilog broker` with TLS, SASL and an ACL
// from files made by `unilog user add`, and the client commands against it
// with the client security flags and UNILOG_* variables.
func TestSecuredBrokerCommands(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "cli-test")
	cert, key := ca.Issue("broker")
	users := filepath.Join(dir, "users")
	mustRun(t, "admin-pw\n", "user", "add", "--users", users, "admin")
	mustRun(t, "reader-pw\n", "user", "add", "--users", users, "reader")
	acl := filepath.Join(dir, "acl")
	writeFile(t, acl, "unilog-acl 1\nadmin admin *\nadmin produce *\nadmin consume *\nreader consume events\nreader group readers\n")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, done := runBrokerCommand(ctx, t, "--data-dir", filepath.Join(dir, "data"), "--listen", "127.0.0.1:0", "--admin", "",
		"--file-size", "8MiB", "--tls-cert", cert, "--tls-key", key, "--users", users, "--acl", acl)

	as := func(user string) []string {
		return []string{"--brokers", addr, "--timeout", "10s", "--tls-ca", ca.File,
			"--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", user, "--sasl-password", user + "-pw"}
	}
	mustRun(t, "", append([]string{"topic", "create", "--topic", "events"}, as("admin")...)...)
	mustRun(t, "a\nb\nc\n", append([]string{"produce", "--topic", "events"}, as("admin")...)...)
	if out := mustRun(t, "", append([]string{"consume", "--topic", "events"}, as("reader")...)...).stdout; out != "a\nb\nc\n" {
		t.Fatalf("reader consumed %q", out)
	}
	if out := mustRun(t, "", append([]string{"consume", "--topic", "events", "--group", "readers", "--count", "3"}, as("reader")...)...).stdout; out != "a\nb\nc\n" {
		t.Fatalf("reader consumed %q in group readers", out)
	}
	if out := mustRun(t, "", append([]string{"group", "list"}, as("reader")...)...).stdout; !strings.Contains(out, "readers") {
		t.Fatalf("reader's group list:\n%s", out)
	}
	if r := runCLI(t, "", append([]string{"consume", "--topic", "events", "--group", "others", "--count", "1"}, as("reader")...)...); r.err == nil || !strings.Contains(r.err.Error(), "GROUP_AUTHORIZATION_FAILED") {
		t.Fatalf("reader consuming in group others: %v\n%s", r.err, r.stdout)
	}

	for _, tc := range []struct {
		name string
		args []string
	}{
		{"reader may not produce", append([]string{"produce", "--topic", "events"}, as("reader")...)},
		{"wrong password", []string{"topic", "list", "--brokers", addr, "--timeout", "5s", "--tls-ca", ca.File,
			"--sasl-mechanism", "SCRAM-SHA-256", "--sasl-user", "admin", "--sasl-password", "reader-pw"}},
		{"no TLS", []string{"topic", "list", "--brokers", addr, "--timeout", "3s",
			"--sasl-mechanism", "SCRAM-SHA-256", "--sasl-user", "admin", "--sasl-password", "admin-pw"}},
		{"no login", []string{"topic", "list", "--brokers", addr, "--timeout", "3s", "--tls-ca", ca.File}},
	} {
		if r := runCLI(t, "x\n", tc.args...); r.err == nil {
			t.Errorf("%s: succeeded\n%s", tc.name, r.stdout)
		}
	}
	// A grant written to the ACL file reaches the running broker.
	writeFile(t, acl, "unilog-acl 1\nadmin admin *\nadmin produce *\nadmin consume *\nreader consume events\nreader group readers\nreader produce events\n")
	poll.Until(t, "the reader's produce grant to take effect", func() error {
		return runCLI(t, "d\n", append([]string{"produce", "--topic", "events"}, as("reader")...)...).err
	})
	t.Setenv("UNILOG_TLS_CA", ca.File)
	t.Setenv("UNILOG_SASL_MECHANISM", "PLAIN")
	t.Setenv("UNILOG_SASL_USER", "reader")
	t.Setenv("UNILOG_SASL_PASSWORD", "reader-pw")
	if out := mustRun(t, "", "consume", "--brokers", addr, "--topic", "events", "--count", "1").stdout; out != "a\n" {
		t.Fatalf("reader from the environment consumed %q", out)
	}
	cancel()
	if r := <-done; r.err != nil {
		t.Fatalf("broker: %v\n%s", r.err, r.stderr)
	}
}

// TestAdminClientCAFlag: --admin-client-ca gives the admin port's TLS the
// CA to verify client certificates with, verified when presented so that
// probes reach /healthz (the broker refuses the other endpoints without
// one); it needs --admin-tls.
func TestAdminClientCAFlag(t *testing.T) {
	ca := tlstest.NewCA(t, "admin")
	cert, key := ca.Issue("broker")
	tlsArgs := []string{"--data-dir", "/d", "--tls-cert", cert, "--tls-key", key, "--admin-tls"}
	for _, tc := range []struct {
		args []string
		want tls.ClientAuthType
	}{
		{tlsArgs, tls.NoClientCert},
		{append(tlsArgs, "--admin-client-ca", ca.File), tls.VerifyClientCertIfGiven},
	} {
		cfg, _, err := parsedBrokerConfig(t, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		admin := cfg.Security.AdminTLS
		if admin == nil {
			t.Fatalf("%q: no admin TLS", tc.args)
		}
		if admin.ClientAuth != tc.want || (admin.ClientCAs != nil) != (tc.want != tls.NoClientCert) {
			t.Fatalf("%q: admin client auth %v, client CAs set %v; want %v", tc.args, admin.ClientAuth, admin.ClientCAs != nil, tc.want)
		}
	}
	if _, _, err := parsedBrokerConfig(t, "--data-dir", "/d", "--admin-client-ca", ca.File); err == nil || !strings.Contains(err.Error(), "--admin-tls") {
		t.Fatalf("--admin-client-ca without --admin-tls: %v", err)
	}
}
