package broker

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestAdminPprof: the admin port serves Go's profiles under /debug/pprof/.
func TestAdminPprof(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	for _, tc := range []struct{ path, want string }{
		{"/debug/pprof/", "goroutine"},
		{"/debug/pprof/goroutine?debug=1", "goroutine profile:"},
		{"/debug/pprof/cmdline", ""},
	} {
		resp, err := http.Get("http://" + b.AdminAddr() + tc.path)
		if err != nil {
			t.Fatalf("GET %s: %v", tc.path, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(body), tc.want) {
			t.Fatalf("GET %s: status %d, %v, body %.200q does not hold %q", tc.path, resp.StatusCode, err, body, tc.want)
		}
	}
}
