package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/unilog/unilog/internal/poll"
	"github.com/unilog/unilog/internal/tlsconf/tlstest"
)

// The console tests drive Debian's Chromium headless through chromedp,
// which speaks the DevTools protocol straight to the browser: no driver
// process, no Node, no browser download (`make test-deps` installs the
// chromium package). Each page is compared with what the CLI prints for
// the same broker. With UNILOG_CONSOLE_SCREENSHOTS set to a directory the
// pages are saved there as PNGs (docs/console/ holds them).

// chromiumPath finds a Chromium to drive, "" when none is installed.
func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// newBrowser starts a headless Chromium for the test, with the flags that
// keep it off the network but for the pages it is sent to.
func newBrowser(t *testing.T, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		t.Skip("no chromium on PATH: `make test-deps` installs Debian's chromium for the console's browser tests")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	// No deadline: it would end the browser, and go test's -timeout
	// already bounds a test that hangs.
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(opts, extra...)...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium %s: %v", path, err)
	}
	return ctx
}

// consoleBroker is a `unilog broker` command run in-process.
type consoleBroker struct {
	kafka string
	admin string // http://host:port
}

func startConsoleBroker(t *testing.T, args ...string) consoleBroker {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, done := startBrokerCommand(ctx, t, append([]string{"--data-dir", t.TempDir(), "--listen", "127.0.0.1:0",
		"--admin", "127.0.0.1:0", "--file-size", "8MiB", "--flush", "sync"}, args...)...)
	t.Cleanup(func() {
		cancel()
		if r := <-done; r.err != nil {
			t.Errorf("broker: %v\n%s", r.err, r.stderr)
		}
	})
	m := listeningLine.FindStringSubmatch(out)
	return consoleBroker{kafka: m[1], admin: strings.TrimSuffix(m[2], "/metrics")}
}

// page opens the console at hash and waits until the page has drawn it.
func page(t *testing.T, ctx context.Context, admin, hash string) {
	t.Helper()
	route := strings.TrimPrefix(hash, "#")
	if err := chromedp.Do(ctx,
		chromedp.Navigate(admin+"/ui/"+hash),
		chromedp.WaitReady(chromedp.CSS(fmt.Sprintf(`main[data-loaded=%q]`, route))),
	); err != nil {
		t.Fatalf("open %s: %v", hash, err)
	}
	screenshot(t, ctx, route)
}

// screenshot saves the page when UNILOG_CONSOLE_SCREENSHOTS names a
// directory, as the route's first word (cluster.png, topic.png, ...).
func screenshot(t *testing.T, ctx context.Context, route string) {
	dir := os.Getenv("UNILOG_CONSOLE_SCREENSHOTS")
	if dir == "" {
		return
	}
	name := strings.FieldsFunc(route, func(r rune) bool { return r == '/' || r == '?' })
	if strings.Count(route, "/") == 3 {
		name[0] = "partition"
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, t.Name()[:strings.IndexByte(t.Name()+"/", '/')]+"-"+name[0]+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// rowsJS reads the page's table rows: each cell's raw value (data-v) or
// text, by its data-k, with the row's data-row.
const rowsJS = `[...document.querySelectorAll('main tbody tr[data-row]')].map(tr => {
	const o = {row: tr.dataset.row};
	tr.querySelectorAll('[data-k]').forEach(td => { o[td.dataset.k] = td.dataset.v ?? td.textContent; });
	return o;
})`

func rows(t *testing.T, ctx context.Context) []map[string]string {
	t.Helper()
	out, err := chromedp.Run(ctx, chromedp.Evaluate[[]map[string]string](rowsJS))
	if err != nil {
		t.Fatalf("read rows: %v", err)
	}
	return out
}

// rowBy returns the rows keyed by their data-row, keeping those with key.
func rowBy(all []map[string]string, key string) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, r := range all {
		if _, ok := r[key]; ok {
			out[r["row"]] = r
		}
	}
	return out
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

// confirm clicks sel, types typed into the confirmation (when it asks for
// a name) and confirms; then waits for the page named by after.
func confirm(t *testing.T, ctx context.Context, sel, typed, after string) {
	t.Helper()
	actions := []chromedp.Action[chromedp.Void]{chromedp.Click(chromedp.CSS(sel)), chromedp.WaitVisible(chromedp.CSS("#confirm-ok"))}
	if typed != "" {
		actions = append(actions, chromedp.SendKeys(chromedp.CSS("#confirm-input"), typed))
	}
	actions = append(actions, chromedp.Click(chromedp.CSS("#confirm-ok")),
		chromedp.WaitReady(chromedp.CSS(fmt.Sprintf(`main[data-loaded=%q]`, after))))
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", sel, err)
	}
}

// browserFetch sends a request from the page, as its script would, and
// returns the status and the error the console answered.
func browserFetch(t *testing.T, ctx context.Context, method, path, body string) (int, string) {
	t.Helper()
	js := fmt.Sprintf(`fetch(%q, {method: %q, headers: {'Content-Type': 'application/json', 'X-Unilog-Console': '1'}, body: %s})
		.then(async r => ({status: r.status, error: (await r.json()).error || ''}))`, path, method, jsBody(body))
	res, err := chromedp.Run(ctx, chromedp.Evaluate[struct {
		Status int    `json:"status"`
		Error  string `json:"error"`
	}](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return res.Status, res.Error
}

func jsBody(body string) string {
	if body == "" {
		return "undefined"
	}
	return strconv.Quote(body)
}

// describeTopic parses `topic describe`: partition -> leader, log start,
// high watermark, records.
func describeTopic(t *testing.T, addr, topic string) map[string][4]string {
	t.Helper()
	out := mustRun(t, "", "topic", "describe", "--brokers", addr, "--topic", topic).stdout
	parts := map[string][4]string{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 7 && f[0] != "PARTITION" {
			parts[f[0]] = [4]string{f[1], f[4], f[5], f[6]}
		}
	}
	return parts
}

// describeGroup parses `group describe`: the total lag and, per
// topic/partition, committed, end and lag.
func describeGroup(t *testing.T, addr, group string) (state, lag string, parts map[string][3]string) {
	t.Helper()
	out := mustRun(t, "", "group", "describe", "--brokers", addr, "--group", group).stdout
	m := regexp.MustCompile(`state=(\S+) .* lag=(\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("group describe:\n%s", out)
	}
	parts = map[string][3]string{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 6 {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err == nil {
			parts[f[0]+"/"+f[1]] = [3]string{f[2], f[3], f[4]}
		}
	}
	return m[1], m[2], parts
}

func TestConsolePagesMatchTheCLI(t *testing.T) {
	ctx := newBrowser(t)
	b := startConsoleBroker(t, "--admin-ui-write")
	createTopic(t, b.kafka, "orders", 3)
	var in strings.Builder
	for i := range 60 {
		fmt.Fprintf(&in, "{\"order\":%d,\"item\":\"book\"}\n", i)
	}
	mustRun(t, in.String(), "produce", "--brokers", b.kafka, "--topic", "orders")
	mustRun(t, "", "consume", "--brokers", b.kafka, "--topic", "orders", "--group", "billing", "--count", "20")
	mustRun(t, "late\n", "produce", "--brokers", b.kafka, "--topic", "orders")

	t.Run("cluster", func(t *testing.T) {
		page(t, ctx, b.admin, "#/cluster")
		var st haStatus
		getJSON(t, http.DefaultClient, b.admin+"/status", &st)
		nodes := rowBy(rows(t, ctx), "role")
		n, ok := nodes[strconv.Itoa(int(st.NodeID))]
		if !ok || n["role"] != st.Role || n["epoch"] != strconv.FormatUint(st.Epoch, 10) || n["state"] != "live" {
			t.Errorf("node row %v, /status %+v", nodes, st)
		}
		groups := rowBy(rows(t, ctx), "leader")
		if g := groups[st.ReplicaGroup]; g["leader"] != strconv.Itoa(int(st.NodeID)) || g["epoch"] != strconv.FormatUint(st.Epoch, 10) {
			t.Errorf("replica group row %v, /status %+v", groups, st)
		}
		if s := text(t, ctx, "#log-state"); s != "writable" {
			t.Errorf("log state %q", s)
		}
	})

	t.Run("topics", func(t *testing.T) {
		page(t, ctx, b.admin, "#/topics")
		cli := describeTopic(t, b.kafka, "orders")
		var records int
		for _, p := range cli {
			n, _ := strconv.Atoi(p[3])
			records += n
		}
		r := rowBy(rows(t, ctx), "records")["orders"]
		if r["partitions"] != "3" || r["records"] != strconv.Itoa(records) {
			t.Errorf("orders row %v; topic describe has %d records in 3 partitions", r, records)
		}
		if n, _ := strconv.Atoi(r["bytes"]); n <= 0 {
			t.Errorf("orders bytes %q", r["bytes"])
		}
		// Searching leaves only what matches.
		page(t, ctx, b.admin, "#/topics?q=ORD&offset=0")
		if got := rowBy(rows(t, ctx), "records"); len(got) != 1 || got["orders"] == nil {
			t.Errorf("search ORD: rows %v", got)
		}
	})

	t.Run("topic", func(t *testing.T) {
		page(t, ctx, b.admin, "#/topic/orders")
		cli := describeTopic(t, b.kafka, "orders")
		got := rowBy(rows(t, ctx), "log_end")
		for p, want := range cli {
			r := got[p]
			if r == nil || r["leader"] != want[0] || r["log_start"] != want[1] || r["log_end"] != want[2] || r["records"] != want[3] {
				t.Errorf("partition %s: page %v, topic describe %v", p, r, want)
			}
		}
		if len(got) != len(cli) {
			t.Errorf("page has %d partitions, topic describe %d", len(got), len(cli))
		}
	})

	t.Run("partition", func(t *testing.T) {
		page(t, ctx, b.admin, "#/topic/orders/1?format=text&limit=500&offset=0")
		want := strings.Fields(mustRun(t, "", "consume", "--brokers", b.kafka, "--topic", "orders", "--partition", "1").stdout)
		var got []string
		for _, r := range rows(t, ctx) {
			got = append(got, strings.TrimSpace(r["value"]))
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("partition 1 values on the page:\n%q\nconsume -p 1:\n%q", got, want)
		}
		// By time: from the first record's timestamp on, the same records.
		first, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('td[data-k=timestamp]').textContent`))
		if err != nil {
			t.Fatal(err)
		}
		page(t, ctx, b.admin, "#/topic/orders/1?format=text&limit=500&time="+first)
		if n := len(rows(t, ctx)); n != len(want) {
			t.Errorf("from time %s: %d records, want %d", first, n, len(want))
		}
	})

	t.Run("groups", func(t *testing.T) {
		page(t, ctx, b.admin, "#/groups")
		state, lag, _ := describeGroup(t, b.kafka, "billing")
		r := rowBy(rows(t, ctx), "lag")["billing"]
		if r["state"] != state || r["members"] != "0" || r["lag"] != lag {
			t.Errorf("billing row %v; group describe state=%s lag=%s", r, state, lag)
		}
	})

	t.Run("group", func(t *testing.T) {
		page(t, ctx, b.admin, "#/group/billing")
		_, lag, cli := describeGroup(t, b.kafka, "billing")
		if s := text(t, ctx, "#group-lag"); strings.ReplaceAll(s, ",", "") != lag {
			t.Errorf("total lag %q, group describe %s", s, lag)
		}
		got := rowBy(rows(t, ctx), "committed")
		for tp, want := range cli {
			r := got[tp]
			if r == nil || dash(r["committed"]) != want[0] || r["log_end"] != want[1] || dash(r["lag"]) != want[2] {
				t.Errorf("%s: page %v, group describe %v", tp, r, want)
			}
		}
		if len(got) != len(cli) || len(cli) != 3 {
			t.Errorf("page has %d partitions, group describe %d, want 3", len(got), len(cli))
		}
	})

	t.Run("metrics", func(t *testing.T) {
		page(t, ctx, b.admin, "#/metrics")
		charts, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('.chart .uplot canvas').length`))
		if err != nil {
			t.Fatal(err)
		}
		if charts != 6 {
			t.Errorf("%d charts drawn, want 6", charts)
		}
	})

	t.Run("writes", func(t *testing.T) {
		page(t, ctx, b.admin, "#/topics")
		if err := chromedp.Do(ctx,
			chromedp.SendKeys(chromedp.CSS("#new-topic"), "made"),
			chromedp.SetValue(chromedp.CSS("#new-partitions"), "2")); err != nil {
			t.Fatal(err)
		}
		confirm(t, ctx, "#create-topic", "", "/topic/made")
		if got := describeTopic(t, b.kafka, "made"); len(got) != 2 {
			t.Fatalf("after create, topic describe made: %v", got)
		}
		if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS("#total-partitions"), "4")); err != nil {
			t.Fatal(err)
		}
		confirm(t, ctx, "#add-partitions", "", "/topic/made")
		if got := describeTopic(t, b.kafka, "made"); len(got) != 4 {
			t.Fatalf("after add partitions, topic describe made: %v; page error %q", got, text(t, ctx, "#error"))
		}
		confirm(t, ctx, "#delete-topic", "made", "/topics")
		if out := mustRun(t, "", "topic", "list", "--brokers", b.kafka).stdout; strings.Contains(out, "made") {
			t.Fatalf("after delete, topic list:\n%s", out)
		}

		page(t, ctx, b.admin, "#/group/billing")
		if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS("#reset-to"), "earliest")); err != nil {
			t.Fatal(err)
		}
		confirm(t, ctx, "#reset-group", "", "/group/billing")
		_, _, after := describeGroup(t, b.kafka, "billing")
		for tp, p := range after {
			if p[0] != "0" {
				t.Errorf("after reset to earliest, %s committed %s; page error %q", tp, p[0], text(t, ctx, "#error"))
			}
		}
		confirm(t, ctx, "#delete-group", "billing", "/groups")
		if out := mustRun(t, "", "group", "list", "--brokers", b.kafka).stdout; strings.Contains(out, "billing") {
			t.Fatalf("after delete, group list:\n%s", out)
		}
	})

	t.Run("reset refused with members", func(t *testing.T) {
		cctx, cancel := context.WithCancel(context.Background())
		done := make(chan cliResult, 1)
		go func() {
			done <- runCLIContext(cctx, t, "", "consume", "--brokers", b.kafka, "--topic", "orders", "--group", "live", "--follow")
		}()
		defer func() {
			cancel()
			<-done
		}()
		poll.True(t, "the consumer to join group live", func() bool {
			return strings.Contains(runCLI(t, "", "group", "describe", "--brokers", b.kafka, "--group", "live").stdout, "members=1")
		})
		page(t, ctx, b.admin, "#/groups")
		status, msg := browserFetch(t, ctx, "POST", "api/groups/live/reset", `{"topic":"orders","to":"earliest"}`)
		if status != http.StatusConflict || !strings.Contains(msg, "1 active members") {
			t.Errorf("reset of a group with a member: %d %q", status, msg)
		}
	})
}

func TestConsoleRefusesWritesWithoutTheFlag(t *testing.T) {
	ctx := newBrowser(t)
	b := startConsoleBroker(t)
	createTopic(t, b.kafka, "kept", 1)
	page(t, ctx, b.admin, "#/topic/kept")
	if mode := text(t, ctx, "#mode"); mode != "read-only" {
		t.Errorf("mode %q", mode)
	}
	buttons, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#delete-topic, #add-partitions').length`))
	if err != nil {
		t.Fatal(err)
	}
	if buttons != 0 {
		t.Errorf("%d write buttons on a read-only console", buttons)
	}
	for _, req := range []struct{ method, path, body string }{
		{"POST", "api/topics", `{"name":"new","partitions":1}`},
		{"POST", "api/topics/kept/partitions", `{"total":2}`},
		{"DELETE", "api/topics/kept", ""},
		{"POST", "api/groups/g/reset", `{"topic":"kept","to":"earliest"}`},
		{"DELETE", "api/groups/g", ""},
	} {
		status, msg := browserFetch(t, ctx, req.method, req.path, req.body)
		if status != http.StatusForbidden || !strings.Contains(msg, "--admin-ui-write") {
			t.Errorf("%s %s: %d %q", req.method, req.path, status, msg)
		}
	}
	if got := describeTopic(t, b.kafka, "kept"); len(got) != 1 {
		t.Errorf("kept changed: %v", got)
	}
	if out := mustRun(t, "", "topic", "list", "--brokers", b.kafka).stdout; strings.Contains(out, "new") {
		t.Errorf("topic created through a read-only console:\n%s", out)
	}
}

// TestConsoleNeedsTheAdminClientCertificate: behind --admin-client-ca the
// console, its API and its writes need a client certificate like /metrics;
// with one, the console reads through the TLS Kafka listener.
func TestConsoleNeedsTheAdminClientCertificate(t *testing.T) {
	ca := tlstest.NewCA(t, "console")
	cert, key := ca.Issue("broker")
	clientCert, clientKey := ca.Issue("operator")
	b := startConsoleBroker(t, "--tls-cert", cert, "--tls-key", key, "--admin-tls", "--admin-client-ca", ca.File, "--admin-ui-write")
	admin := strings.Replace(b.admin, "http://", "https://", 1)
	roots := x509.NewCertPool()
	pem, err := os.ReadFile(ca.File)
	if err != nil {
		t.Fatal(err)
	}
	roots.AppendCertsFromPEM(pem)
	anonymous := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	pair, err := tls.LoadX509KeyPair(clientCert, clientKey)
	if err != nil {
		t.Fatal(err)
	}
	operator := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}}}}

	create := func(c *http.Client) int {
		req, _ := http.NewRequest("POST", admin+"/ui/api/topics", strings.NewReader(`{"name":"made","partitions":2}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Unilog-Console", "1")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, path := range []string{"/ui/", "/ui/app.js", "/ui/api/topics", "/ui/api/cluster"} {
		resp, err := anonymous.Get(admin + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without a client certificate: %s", path, resp.Status)
		}
	}
	if s := create(anonymous); s != http.StatusUnauthorized {
		t.Errorf("create without a client certificate: %d", s)
	}
	if s := create(operator); s != http.StatusOK {
		t.Errorf("create with the client certificate: %d", s)
	}
	var topics struct {
		Items []struct {
			Name       string `json:"name"`
			Partitions int    `json:"partitions"`
		} `json:"items"`
	}
	getJSON(t, operator, admin+"/ui/api/topics?q=made", &topics)
	if len(topics.Items) != 1 || topics.Items[0].Partitions != 2 {
		t.Errorf("topics through the TLS listener: %+v", topics)
	}

	// A browser without the certificate gets the refusal, not the console.
	ctx := newBrowser(t, chromedp.IgnoreCertErrors)
	if err := chromedp.Do(ctx, chromedp.Navigate(admin+"/ui/")); err != nil {
		t.Fatal(err)
	}
	body, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body, "client certificate required") {
		t.Errorf("browser without a certificate saw %q", body)
	}
}

// dash is how the CLI prints what the page holds as -1: nothing committed.
func dash(v string) string {
	if v == "-1" {
		return "-"
	}
	return v
}

func getJSON(t *testing.T, c *http.Client, url string, v any) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s %s", url, resp.Status, body)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// TestConsoleShowsTheWholeCluster: a follower's console shows every node
// of a three-node replica group, its lease, and the leader's partitions,
// whose records it reads through the leader.
func TestConsoleShowsTheWholeCluster(t *testing.T) {
	ctx := newBrowser(t)
	c := startBrokerGroup(t, 3)
	leader, st := c.leader()
	follower := (leader + 1) % len(c.nodes)
	admin := "http://" + c.nodes[follower].admin
	kafka := c.nodes[leader].kafka
	createTopic(t, kafka, "orders", 2)
	mustRun(t, "a\nb\nc\nd\ne\nf\n", "produce", "--brokers", kafka, "--topic", "orders", "--acks", "all")
	c.waitInSync(leader)

	page(t, ctx, admin, "#/cluster")
	nodes := rowBy(rows(t, ctx), "role")
	if len(nodes) != 3 {
		t.Fatalf("%d nodes on the cluster page, want 3: %v", len(nodes), nodes)
	}
	for i, nd := range c.nodes {
		s, err := c.status(i)
		if err != nil {
			t.Fatal(err)
		}
		r := nodes[strconv.Itoa(nd.id)]
		wantInSync := "yes"
		if i == leader {
			wantInSync = "-"
		}
		if r["role"] != s.Role || r["group"] != "ha" || r["state"] != "live" || r["in_sync"] != wantInSync {
			t.Errorf("node %d: page %v, /status %+v", nd.id, r, s)
		}
	}
	if g := rowBy(rows(t, ctx), "leader")["ha"]; g["leader"] != strconv.Itoa(c.nodes[leader].id) || g["epoch"] != strconv.FormatUint(st.Epoch, 10) {
		t.Errorf("replica group row %v; leader %d at epoch %d", g, c.nodes[leader].id, st.Epoch)
	}
	// What `unilog cluster status` prints of each node: role, epoch,
	// advertised address and state.
	out := mustRun(t, "", "cluster", "status", "--nats", c.nodes[0].proxy.URL()).stdout
	seen := 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 10 || f[1] != "ha" {
			continue
		}
		seen++
		if r := nodes[f[0]]; r["role"] != f[2] || r["epoch"] != f[3] || r["advertise"] != f[4] || r["state"] != f[9] {
			t.Errorf("node %s: page %v, cluster status %q", f[0], r, line)
		}
	}
	if seen != 3 {
		t.Errorf("cluster status printed %d nodes of ha:\n%s", seen, out)
	}

	page(t, ctx, admin, "#/topic/orders")
	cli := describeTopic(t, kafka, "orders")
	got := rowBy(rows(t, ctx), "log_end")
	for p, want := range cli {
		if r := got[p]; r == nil || r["leader"] != want[0] || r["log_end"] != want[2] || r["records"] != want[3] {
			t.Errorf("partition %s on the follower's console %v, topic describe on the leader %v", p, r, want)
		}
	}
	var shown []string
	for p := range 2 {
		page(t, ctx, admin, fmt.Sprintf("#/topic/orders/%d?format=text&offset=0&limit=100", p))
		for _, r := range rows(t, ctx) {
			shown = append(shown, strings.TrimSpace(r["value"]))
		}
	}
	slices.Sort(shown)
	if strings.Join(shown, "") != "abcdef" {
		t.Errorf("records through the follower's console: %q", shown)
	}
}

// TestGrafanaDashboardCoversTheMetrics: every unilog_ metric a broker
// serves is drawn by docs/grafana's dashboard and listed in its README.
func TestGrafanaDashboardCoversTheMetrics(t *testing.T) {
	b := startConsoleBroker(t)
	resp, err := http.Get(b.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(string(body), "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[1] == "TYPE" && strings.HasPrefix(f[2], "unilog_") {
			names = append(names, f[2])
		}
	}
	if len(names) < 20 {
		t.Fatalf("only %d unilog_ metrics: %q", len(names), names)
	}
	for _, file := range []string{"unilog-dashboard.json", "README.md"} {
		doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "grafana", file))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			if !strings.Contains(string(doc), name) {
				t.Errorf("docs/grafana/%s lacks %s", file, name)
			}
		}
	}
}

// TestConsoleLogsInWithSASL: behind SASL the console is served only with
// --admin-ui-user, and then sees what that user's ACL grants.
func TestConsoleLogsInWithSASL(t *testing.T) {
	dir := t.TempDir()
	users := filepath.Join(dir, "users")
	mustRun(t, "admin-pw\n", "user", "add", "--users", users, "admin")
	mustRun(t, "viewer-pw\n", "user", "add", "--users", users, "viewer")
	acl := filepath.Join(dir, "acl")
	writeFile(t, acl, "unilog-acl 1\nadmin admin *\nadmin produce *\nadmin consume *\nviewer consume events\n")

	anonymous := startConsoleBroker(t, "--users", users, "--acl", acl)
	resp, err := http.Get(anonymous.admin + "/ui/api/topics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a console with no user behind SASL: %s, want no console", resp.Status)
	}

	b := startConsoleBroker(t, "--users", users, "--acl", acl, "--admin-ui-user", "viewer", "--admin-ui-password", "viewer-pw")
	asAdmin := []string{"--brokers", b.kafka, "--sasl-mechanism", "SCRAM-SHA-256", "--sasl-user", "admin", "--sasl-password", "admin-pw"}
	mustRun(t, "", append([]string{"topic", "create", "--topic", "events", "--partitions", "2"}, asAdmin...)...)
	mustRun(t, "", append([]string{"topic", "create", "--topic", "secret"}, asAdmin...)...)
	mustRun(t, "a\nb\n", append([]string{"produce", "--topic", "events"}, asAdmin...)...)
	var topics struct {
		Items []struct {
			Name    string `json:"name"`
			Records int    `json:"records"`
		} `json:"items"`
	}
	getJSON(t, http.DefaultClient, b.admin+"/ui/api/topics", &topics)
	if len(topics.Items) != 1 || topics.Items[0].Name != "events" || topics.Items[0].Records != 2 {
		t.Errorf("the viewer's console lists %+v, want events with 2 records and not secret", topics.Items)
	}
}
