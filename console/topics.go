package console

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// topicRow is a topic on the topics page.
type topicRow struct {
	Topic
	Records int64 `json:"records"`
	// Bytes sums the partitions' sizes; -1 when a size is unknown.
	Bytes int64 `json:"bytes"`
	// ProduceRate is records per second since the previous look at the
	// topic by any console page, -1 on the first.
	ProduceRate float64 `json:"produce_rate"`
	// FetchRate is record bytes per second this node served from the
	// topic over the last two metric samples, -1 before there are two.
	FetchRate float64 `json:"fetch_rate"`
	Err       string  `json:"error,omitempty"`
}

type list[T any] struct {
	Total int `json:"total"`
	Items []T `json:"items"`
}

func (c *Console) serveTopics(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := requestContext(r)
	defer cancel()
	topics, err := c.o.Source.Topics(ctx)
	if err != nil {
		c.reply(w, r, nil, err)
		return
	}
	slices.SortFunc(topics, func(a, b Topic) int { return strings.Compare(a.Name, b.Name) })
	page, total := apply(parsePage(r.URL.Query()), topics, func(t Topic) string { return t.Name })
	want := make([]TopicPartitions, 0, len(page))
	for _, t := range page {
		want = append(want, TopicPartitions{t.Name, allPartitions(t.Partitions)})
	}
	parts, err := c.o.Source.Partitions(ctx, want)
	if err != nil {
		c.reply(w, r, nil, err)
		return
	}
	rows := make([]topicRow, len(page))
	byName := map[string]*topicRow{}
	for i, t := range page {
		rows[i] = topicRow{Topic: t}
		byName[t.Name] = &rows[i]
	}
	ends := map[string]int64{}
	for _, p := range parts {
		row := byName[p.Topic]
		if row == nil {
			continue
		}
		if p.Err != "" {
			row.Err = p.Err
			continue
		}
		row.Records += p.End - p.Start
		ends[p.Topic] += p.End
		if p.Bytes < 0 || row.Bytes < 0 {
			row.Bytes = -1
		} else {
			row.Bytes += p.Bytes
		}
	}
	now := time.Now()
	for i := range rows {
		rows[i].ProduceRate = c.produceRate(rows[i].Name, ends[rows[i].Name], now)
		rows[i].FetchRate = c.hist.fetchRate(rows[i].Name)
	}
	c.forgetRates(now.Add(-HistoryLen * SampleInterval))
	c.reply(w, r, list[topicRow]{total, rows}, nil)
}

// produceRate is the records per second appended to topic since the
// mark its previous look left, -1 on the first look. Looks less than a
// second apart keep the previous mark and rate, so that pages polling
// together do not divide by a few milliseconds.
func (c *Console) produceRate(topic string, end int64, now time.Time) float64 {
	c.ratesMu.Lock()
	defer c.ratesMu.Unlock()
	prev, ok := c.rates[topic]
	switch {
	case !ok || end < prev.end: // new, or deleted and created again
		c.rates[topic] = rateMark{at: now, end: end, rate: -1}
		return -1
	case now.Sub(prev.at) < time.Second:
		return prev.rate
	}
	rate := float64(end-prev.end) / now.Sub(prev.at).Seconds()
	c.rates[topic] = rateMark{at: now, end: end, rate: rate}
	return rate
}

// forgetRates drops the marks of topics not looked at since before, so
// that deleted topics do not stay.
func (c *Console) forgetRates(before time.Time) {
	c.ratesMu.Lock()
	defer c.ratesMu.Unlock()
	for topic, m := range c.rates {
		if m.at.Before(before) {
			delete(c.rates, topic)
		}
	}
}

func allPartitions(n int32) []int32 {
	ps := make([]int32, n)
	for i := range ps {
		ps[i] = int32(i)
	}
	return ps
}

// partitionRow is a partition on the topic page.
type partitionRow struct {
	Partition
	Records int64 `json:"records"`
}

type topicPage struct {
	Topic
	list[partitionRow]
}

// serveTopic pages a topic's partitions; q matches a partition's number.
func (c *Console) serveTopic(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := requestContext(r)
	defer cancel()
	name := r.PathValue("topic")
	topics, err := c.o.Source.Topics(ctx, name)
	if err != nil {
		c.reply(w, r, nil, err)
		return
	}
	if len(topics) != 1 {
		c.reply(w, r, nil, &httpError{http.StatusNotFound, fmt.Errorf("no topic %q", name)})
		return
	}
	t := topics[0]
	ids, total := apply(parsePage(r.URL.Query()), allPartitions(t.Partitions), func(p int32) string { return strconv.Itoa(int(p)) })
	parts, err := c.o.Source.Partitions(ctx, []TopicPartitions{{name, ids}})
	if err != nil {
		c.reply(w, r, nil, err)
		return
	}
	rows := make([]partitionRow, len(parts))
	for i, p := range parts {
		rows[i] = partitionRow{Partition: p, Records: p.End - p.Start}
	}
	c.reply(w, r, topicPage{t, list[partitionRow]{total, rows}}, nil)
}

// serveRecords reads records of one partition: ?offset=N, or ?time= as
// unix milliseconds or RFC 3339; the last ?limit (default 20) records
// when neither is given. ?format is auto, text, json or hex.
func (c *Console) serveRecords(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := requestContext(r)
	defer cancel()
	q, format, err := parseRecordQuery(r)
	if err != nil {
		c.reply(w, r, nil, badRequest(err))
		return
	}
	if q.Offset < 0 && q.AtMs < 0 {
		// The newest records: start limit before the end.
		parts, err := c.o.Source.Partitions(ctx, []TopicPartitions{{q.Topic, []int32{q.Partition}}})
		if err == nil && len(parts) == 1 && parts[0].Err != "" {
			err = fmt.Errorf("%s", parts[0].Err)
		}
		if err != nil {
			c.reply(w, r, nil, err)
			return
		}
		q.Offset = max(parts[0].Start, parts[0].End-int64(q.Limit))
	}
	recs, err := c.o.Source.Records(ctx, q)
	shown := make([]shownRecord, len(recs))
	for i, rec := range recs {
		shown[i] = showRecord(rec, format)
	}
	c.reply(w, r, map[string]any{"records": shown}, err)
}

func parseRecordQuery(r *http.Request) (RecordQuery, string, error) {
	v := r.URL.Query()
	q := RecordQuery{Topic: r.PathValue("topic"), Offset: -1, AtMs: -1, Limit: 20}
	p, err := strconv.ParseInt(r.PathValue("partition"), 10, 32)
	if err != nil || p < 0 {
		return q, "", fmt.Errorf("partition %q: want a number", r.PathValue("partition"))
	}
	q.Partition = int32(p)
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return q, "", fmt.Errorf("limit %q: want a positive number", s)
		}
		q.Limit = min(n, 500)
	}
	if s := v.Get("offset"); s != "" {
		if q.Offset, err = strconv.ParseInt(s, 10, 64); err != nil || q.Offset < 0 {
			return q, "", fmt.Errorf("offset %q: want a number", s)
		}
	}
	if s := v.Get("time"); s != "" {
		if q.AtMs, err = strconv.ParseInt(s, 10, 64); err != nil {
			t, terr := time.Parse(time.RFC3339Nano, s)
			if terr != nil {
				return q, "", fmt.Errorf("time %q: want unix milliseconds or an RFC 3339 time", s)
			}
			q.AtMs = t.UnixMilli()
		}
	}
	format := v.Get("format")
	switch format {
	case "":
		format = FormatAuto
	case FormatAuto, FormatText, FormatJSON, FormatHex:
	default:
		return q, "", fmt.Errorf("format %q: want auto, text, json or hex", format)
	}
	return q, format, nil
}
