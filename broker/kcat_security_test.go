package broker

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// TestKcatSecurity round-trips records with kcat (librdkafka, an
// independent TLS and SASL client) over TLS, mutual TLS, SASL_PLAINTEXT
// and SASL_SSL, and checks that it is refused without a client
// certificate or with a wrong password.
func TestKcatSecurity(t *testing.T) {
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatal("kcat not installed (make test-deps installs it)")
	}
	pki := newTestPKI(t)
	clientCert, clientKey := pki.ca.Issue("kcat-client")
	tlsOpts := []string{"-X", "ssl.ca.location=" + pki.ca.File}
	mtlsOpts := append(append([]string(nil), tlsOpts...), "-X", "ssl.certificate.location="+clientCert, "-X", "ssl.key.location="+clientKey)
	saslOpts := func(proto, mech, user, pw string) []string {
		return []string{"-X", "security.protocol=" + proto, "-X", "sasl.mechanisms=" + mech, "-X", "sasl.username=" + user, "-X", "sasl.password=" + pw}
	}
	for _, tc := range []struct {
		name    string
		tls     bool
		mutual  bool
		sasl    bool
		opts    []string
		refused bool
	}{
		{"tls", true, false, false, append([]string{"-X", "security.protocol=ssl"}, tlsOpts...), false},
		{"mutual tls", true, true, false, append([]string{"-X", "security.protocol=ssl"}, mtlsOpts...), false},
		{"mutual tls without client certificate", true, true, false, append([]string{"-X", "security.protocol=ssl"}, tlsOpts...), true},
		{"sasl plaintext scram-sha-256", false, false, true, saslOpts("sasl_plaintext", "SCRAM-SHA-256", "alice", "alice-pw"), false},
		{"sasl plaintext plain", false, false, true, saslOpts("sasl_plaintext", "PLAIN", "bob", "bob-pw"), false},
		{"sasl ssl scram-sha-512", true, false, true, append(saslOpts("sasl_ssl", "SCRAM-SHA-512", "carol", "carol-pw"), tlsOpts...), false},
		{"sasl wrong password", false, false, true, saslOpts("sasl_plaintext", "SCRAM-SHA-256", "alice", "bob-pw"), true},
		{"sasl unknown user", true, false, true, append(saslOpts("sasl_ssl", "PLAIN", "mallory", "alice-pw"), tlsOpts...), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, t.TempDir())
			cfg.AutoCreateTopics = true
			if tc.tls {
				cfg.Security.TLS = pki.server(t, tc.mutual)
			}
			if tc.sasl {
				cfg.Security.Credentials = testCredentials(t)
			}
			b := startBroker(t, cfg)
			run := func(stdin string, args ...string) (string, error) {
				t.Helper()
				args = append(append([]string{"-b", b.Addr(), "-m", "10"}, tc.opts...), args...)
				cmd := exec.CommandContext(testCtx(t), kcat, args...)
				cmd.Stdin = strings.NewReader(stdin)
				out, err := cmd.CombinedOutput()
				return string(out), err
			}
			lines := []string{"first", "second", "third"}
			out, err := run(strings.Join(lines, "\n")+"\n", "-P", "-t", "kcat-secure", "-p", "0")
			if tc.refused {
				if err == nil {
					t.Fatalf("kcat was let in:\n%s", out)
				}
				return
			}
			if err != nil {
				t.Fatalf("kcat -P: %v\n%s", err, out)
			}
			out, err = run("", "-C", "-t", "kcat-secure", "-o", "beginning", "-e", "-q", "-f", "%o %s\n")
			if err != nil {
				t.Fatalf("kcat -C: %v\n%s", err, out)
			}
			var want []string
			for i, l := range lines {
				want = append(want, fmt.Sprintf("%d %s", i, l))
			}
			if got := strings.TrimSpace(out); got != strings.Join(want, "\n") {
				t.Fatalf("kcat -C read:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
			}
		})
	}
}
