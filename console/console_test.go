package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
)

// fakeSource answers from memory and counts the calls a page makes.
type fakeSource struct {
	topics     []Topic
	partitions int // Partitions calls
	asked      int // partitions asked for, in all
	resetErr   error
	resets     int
	recordsErr error
}

func (f *fakeSource) Cluster(context.Context) (Cluster, error)           { return Cluster{}, nil }
func (f *fakeSource) Topics(context.Context, ...string) ([]Topic, error) { return f.topics, nil }
func (f *fakeSource) Partitions(_ context.Context, want []TopicPartitions) ([]Partition, error) {
	f.partitions++
	var out []Partition
	for _, w := range want {
		for _, p := range w.Partitions {
			f.asked++
			out = append(out, Partition{Topic: w.Topic, ID: p, Start: 10, End: 10 + int64(p), Bytes: 100})
		}
	}
	return out, nil
}
func (f *fakeSource) Records(context.Context, RecordQuery) ([]Record, error) {
	return nil, f.recordsErr
}
func (f *fakeSource) Groups(context.Context) ([]GroupSummary, error)      { return nil, nil }
func (f *fakeSource) Describe(context.Context, []string) ([]Group, error) { return nil, nil }
func (f *fakeSource) CreateTopic(context.Context, string, int32) error    { return nil }
func (f *fakeSource) AddPartitions(context.Context, string, int32) error  { return nil }
func (f *fakeSource) DeleteTopic(context.Context, string) error           { return nil }
func (f *fakeSource) DeleteGroup(context.Context, string) error           { return nil }
func (f *fakeSource) ResetGroup(context.Context, string, string, string) ([]Reset, error) {
	f.resets++
	return []Reset{}, f.resetErr
}

func quiet() *logrus.Logger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

func TestApplyPagesAndSearches(t *testing.T) {
	items := []string{"alpha", "beta", "gamma", "delta", "epsilon"}
	for _, tc := range []struct {
		query     string
		want      []string
		wantTotal int
	}{
		{"", []string{"alpha", "beta"}, 5},
		{"offset=2&limit=2", []string{"gamma", "delta"}, 5},
		{"offset=4&limit=2", []string{"epsilon"}, 5},
		{"offset=9", []string{}, 5},
		{"q=TA", []string{"beta", "delta"}, 2},
		{"q=ta&offset=1", []string{"delta"}, 2},
		{"limit=100000", items, 5},
	} {
		v, _ := url.ParseQuery(tc.query)
		p := parsePage(v)
		if !strings.Contains(tc.query, "limit") {
			p.Limit = 2
		}
		got, total := apply(p, items, func(s string) string { return s })
		if strings.Join(got, ",") != strings.Join(tc.want, ",") || total != tc.wantTotal || got == nil {
			t.Errorf("%q: got %q of %d, want %q of %d", tc.query, got, total, tc.want, tc.wantTotal)
		}
	}
	if p := parsePage(url.Values{"limit": {"5000"}}); p.Limit != MaxPageSize {
		t.Errorf("limit 5000 became %d, want the cap %d", p.Limit, MaxPageSize)
	}
}

func TestDecode(t *testing.T) {
	long := strings.Repeat("x", maxShown+1)
	for _, tc := range []struct {
		in, format, wantFormat, wantText string
	}{
		{`{"a":1}`, FormatAuto, FormatJSON, "{\n  \"a\": 1\n}"},
		{`{"a":1}`, FormatText, FormatText, `{"a":1}`},
		{"plain", FormatJSON, FormatText, "plain"},
		{"\xff\x00", FormatAuto, FormatHex, "00000000  ff 00                                             |..|\n"},
		{"ab", FormatHex, FormatHex, "00000000  61 62                                             |ab|\n"},
		{long, FormatAuto, FormatText, long[:maxShown]},
	} {
		d := decode([]byte(tc.in), tc.format)
		if d.Format != tc.wantFormat || d.Text != tc.wantText || d.Size != len(tc.in) || d.Cut != (len(tc.in) > maxShown) {
			t.Errorf("decode(%.20q, %s) = %s %.40q size %d cut %v", tc.in, tc.format, d.Format, d.Text, d.Size, d.Cut)
		}
	}
	if decode(nil, FormatAuto) != nil {
		t.Error("a null key decoded as a value")
	}
}

func TestWritesNeedTheFlagTheHeaderAndJSON(t *testing.T) {
	for _, tc := range []struct {
		name        string
		write       bool
		header      bool
		contentType string
		resetErr    error
		want        int
	}{
		{"read-only", false, true, "application/json", nil, http.StatusForbidden},
		{"no header", true, false, "application/json", nil, http.StatusForbidden},
		{"a form", true, true, "application/x-www-form-urlencoded", nil, http.StatusUnsupportedMediaType},
		{"allowed", true, true, "application/json", nil, http.StatusOK},
		{"group has members", true, true, "application/json", Refused{errors.New("the group has 1 active members")}, http.StatusConflict},
		{"broker failed", true, true, "application/json", errors.New("timed out"), http.StatusBadGateway},
	} {
		src := &fakeSource{resetErr: tc.resetErr}
		c := New(Options{Source: src, Admin: src, Write: tc.write, Log: quiet()})
		req := httptest.NewRequest("POST", "/ui/api/groups/g/reset", strings.NewReader(`{"topic":"t","to":"earliest"}`))
		req.Header.Set("Content-Type", tc.contentType)
		if tc.header {
			req.Header.Set(writeHeader, "1")
		}
		rec := httptest.NewRecorder()
		c.ServeHTTP(rec, req)
		c.Close()
		if rec.Code != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, rec.Code, rec.Body, tc.want)
		}
		if called := src.resets > 0; called != (tc.want == http.StatusOK || tc.resetErr != nil) {
			t.Errorf("%s: reset called %d times", tc.name, src.resets)
		}
	}
}

// TestTopicsPageAsksOnce: a page of topics costs one Partitions call for
// the topics on it, however many topics there are.
func TestTopicsPageAsksOnce(t *testing.T) {
	src := &fakeSource{}
	for _, name := range []string{"c", "a", "b", "d"} {
		src.topics = append(src.topics, Topic{Name: name, Partitions: 3})
	}
	c := New(Options{Source: src, Log: quiet()})
	defer c.Close()
	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, httptest.NewRequest("GET", "/ui/api/topics?limit=2&offset=1", nil))
	var got list[topicRow]
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, rec.Body)
	}
	if src.partitions != 1 || src.asked != 6 {
		t.Errorf("%d Partitions calls for %d partitions, want 1 for 6", src.partitions, src.asked)
	}
	// Sorted by name; records are end - start summed: 0 + 1 + 2.
	if got.Total != 4 || len(got.Items) != 2 || got.Items[0].Name != "b" || got.Items[1].Name != "c" ||
		got.Items[0].Records != 3 || got.Items[0].Bytes != 300 || got.Items[0].ProduceRate != -1 {
		t.Errorf("page %+v", got)
	}
}

// TestGroupLagHistoryIsBounded: the lag of the first MaxLagGroups groups
// is kept per sample, null where a group was not reported; later groups
// have none.
func TestGroupLagHistoryIsBounded(t *testing.T) {
	reg := prometheus.NewRegistry()
	lag := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "unilog_group_lag_records"}, []string{"group"})
	reg.MustRegister(lag)
	h := newHistory(reg)
	lag.WithLabelValues("early").Set(7)
	h.sample(time.Unix(100, 0))
	for i := range MaxLagGroups {
		lag.WithLabelValues(fmt.Sprintf("g%05d", i)).Set(float64(i))
	}
	lag.WithLabelValues("early").Set(9)
	h.sample(time.Unix(102, 0))

	if len(h.groups) != MaxLagGroups {
		t.Fatalf("%d groups tracked, want %d", len(h.groups), MaxLagGroups)
	}
	ts, v, tracked := h.groupLag("early")
	if !tracked || len(ts) != 2 || ts[1] != 102 || v[0] == nil || *v[0] != 7 || v[1] == nil || *v[1] != 9 {
		t.Errorf("early: %v %v %v", ts, v, tracked)
	}
	tracked1 := 0
	for i := range MaxLagGroups {
		_, v, ok := h.groupLag(fmt.Sprintf("g%05d", i))
		if ok {
			tracked1++
			if v[0] != nil || v[1] == nil || *v[1] != float64(i) {
				t.Fatalf("g%05d: %v", i, v)
			}
		}
	}
	if tracked1 != MaxLagGroups-1 {
		t.Errorf("%d of the later groups tracked, want %d", tracked1, MaxLagGroups-1)
	}
}

func TestReadErrorsAnswerTheirStatus(t *testing.T) {
	for _, tc := range []struct {
		name, path string
		err        error
		want       int
	}{
		{"read", "/ui/api/topics/t/partitions/0/records?offset=0", nil, http.StatusOK},
		{"no such partition", "/ui/api/topics/t/partitions/9/records?offset=0", NotFound{errors.New("UNKNOWN_TOPIC_OR_PARTITION")}, http.StatusNotFound},
		{"broker failed", "/ui/api/topics/t/partitions/0/records?offset=0", errors.New("timed out"), http.StatusBadGateway},
		{"not a partition", "/ui/api/topics/t/partitions/x/records", nil, http.StatusBadRequest},
		{"not a format", "/ui/api/topics/t/partitions/0/records?format=xml", nil, http.StatusBadRequest},
		{"not a time", "/ui/api/topics/t/partitions/0/records?time=yesterday", nil, http.StatusBadRequest},
	} {
		src := &fakeSource{recordsErr: tc.err}
		c := New(Options{Source: src, Log: quiet()})
		rec := httptest.NewRecorder()
		c.ServeHTTP(rec, httptest.NewRequest("GET", tc.path, nil))
		c.Close()
		if rec.Code != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, rec.Code, rec.Body, tc.want)
		}
	}
}

// TestTopicFetchRate: a topic's fetch rate is the change of its
// unilog_topic_fetched_bytes_total over the last two samples, -1 before
// two, 0 for a topic never served, and counted from 0 again when the
// counter went back (its topic deleted and made again).
func TestTopicFetchRate(t *testing.T) {
	reg := prometheus.NewRegistry()
	fetched := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "unilog_topic_fetched_bytes_total"}, []string{"topic"})
	reg.MustRegister(fetched)
	h := newHistory(reg)
	fetched.WithLabelValues("hot").Add(1000)
	h.sample(time.Unix(100, 0))
	if r := h.fetchRate("hot"); r != -1 {
		t.Errorf("one sample: rate %v, want -1", r)
	}
	fetched.WithLabelValues("hot").Add(4000)
	h.sample(time.Unix(102, 0))
	for _, tc := range []struct {
		topic string
		want  float64
	}{{"hot", 2000}, {"cold", 0}} {
		if r := h.fetchRate(tc.topic); r != tc.want {
			t.Errorf("%s: rate %v, want %v", tc.topic, r, tc.want)
		}
	}
	fetched.DeleteLabelValues("hot")
	fetched.WithLabelValues("hot").Add(600)
	h.sample(time.Unix(104, 0))
	if r := h.fetchRate("hot"); r != 300 {
		t.Errorf("after the counter restarted: rate %v, want 300", r)
	}
}
