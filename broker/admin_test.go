package broker

import (
	"crypto/tls"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/unilog/unilog/internal/tlsconf"
	"github.com/unilog/unilog/internal/tlsconf/tlstest"
)

// adminGet fetches path from the admin port and returns its status and
// body.
func adminGet(t *testing.T, hc *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(body)
}

// TestAdminPprof: Go's profiles are served under /debug/pprof/ only when
// asked for; /healthz is there either way.
func TestAdminPprof(t *testing.T) {
	for _, on := range []bool{false, true} {
		cfg := testConfig(t, t.TempDir())
		cfg.AdminPprof = on
		b := startBroker(t, cfg)
		base := "http://" + b.AdminAddr()
		if code, body := adminGet(t, http.DefaultClient, base+"/healthz"); code != http.StatusOK || body != "ok\n" {
			t.Fatalf("pprof %v: /healthz %d %q", on, code, body)
		}
		for _, tc := range []struct{ path, want string }{
			{"/debug/pprof/", "goroutine"},
			{"/debug/pprof/goroutine?debug=1", "goroutine profile:"},
			{"/debug/pprof/cmdline", ""},
			{"/debug/pprof/mutex?debug=1", "--- mutex:"},
		} {
			code, body := adminGet(t, http.DefaultClient, base+tc.path)
			switch {
			case !on && code != http.StatusNotFound:
				t.Fatalf("without AdminPprof: GET %s: status %d, want 404", tc.path, code)
			case on && (code != http.StatusOK || !strings.Contains(body, tc.want)):
				t.Fatalf("with AdminPprof: GET %s: status %d, body %.200q does not hold %q", tc.path, code, body, tc.want)
			}
		}
		if on && runtime.SetMutexProfileFraction(-1) == 0 {
			t.Error("with AdminPprof the mutex profile is off")
		}
	}
}

// TestAdminClientCert: with a client CA on the admin port's TLS, only
// clients presenting a certificate it signed read /metrics and /status;
// probes without one still get /healthz, and a certificate from another CA
// fails the handshake.
func TestAdminClientCert(t *testing.T) {
	pki := newTestPKI(t)
	cfg := testConfig(t, t.TempDir())
	cfg.AdminPprof = true
	cfg.Security.AdminTLS = pki.server(t, true)
	cfg.Security.AdminTLS.ClientAuth = tls.VerifyClientCertIfGiven
	b := startBroker(t, cfg)
	base := "https://" + b.AdminAddr()
	client := func(tc *tls.Config) *http.Client {
		return &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
	}

	probe := client(pki.client(t, ""))
	if code, _ := adminGet(t, probe, base+"/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz without a client certificate: %d, want 200", code)
	}
	member := client(pki.client(t, "prometheus"))
	for _, path := range []string{"/metrics", "/status", "/debug/pprof/cmdline"} {
		if code, _ := adminGet(t, probe, base+path); code != http.StatusUnauthorized {
			t.Errorf("%s without a client certificate: %d, want 401", path, code)
		}
		if code, _ := adminGet(t, member, base+path); code != http.StatusOK {
			t.Errorf("%s with a client certificate of the CA: %d, want 200", path, code)
		}
	}

	other := tlstest.NewCA(t, "other")
	cert, key := other.Issue("mallory")
	f := tlsconf.Files{CA: pki.ca.File, Cert: cert, Key: key}
	tc, err := f.Client(true)
	if err != nil {
		t.Fatal(err)
	}
	// Presented whatever CAs the server names (Go's client would
	// otherwise send none and get the 401 above).
	tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &tc.Certificates[0], nil }
	if resp, err := client(tc).Get(base + "/metrics"); err == nil {
		resp.Body.Close()
		t.Fatalf("a certificate from another CA got %s", resp.Status)
	}
}
