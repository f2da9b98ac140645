// Package promhist reads Prometheus histograms as a registry gathers them
// or a /metrics page serves them: cumulative buckets with the +Inf one
// made explicit, what was observed between two readings, and a quantile
// of that estimated as Prometheus's histogram_quantile does (linear
// within the bucket). The console charts the broker's p99s with it and
// bench compare reads the broker's own produce times.
package promhist

import (
	"errors"
	"math"

	dto "github.com/prometheus/client_model/go"
)

// Bucket is the count of observations at most LE seconds.
type Bucket struct {
	LE    float64
	Count float64
}

// Of is h's buckets, increasing, the last +Inf holding every observation.
// A gathered histogram leaves the +Inf bucket implicit and a parsed page
// lists it; both read alike.
func Of(h *dto.Histogram) []Bucket {
	var bs []Bucket
	for _, b := range h.GetBucket() {
		if !math.IsInf(b.GetUpperBound(), 1) {
			bs = append(bs, Bucket{b.GetUpperBound(), float64(b.GetCumulativeCount())})
		}
	}
	return append(bs, Bucket{math.Inf(1), float64(h.GetSampleCount())})
}

// ErrBuckets is Since's error for readings of different buckets.
var ErrBuckets = errors.New("promhist: readings of different buckets")

// Since is what cur counted after prev, an earlier reading of the same
// histogram; a nil prev (nothing read before) gives cur whole.
func Since(prev, cur []Bucket) ([]Bucket, error) {
	if prev == nil {
		return cur, nil
	}
	if len(prev) != len(cur) {
		return nil, ErrBuckets
	}
	d := make([]Bucket, len(cur))
	for i, b := range cur {
		if prev[i].LE != b.LE {
			return nil, ErrBuckets
		}
		d[i] = Bucket{b.LE, b.Count - prev[i].Count}
	}
	return d, nil
}

// QuantileMs is the q quantile, in milliseconds, of the observations in
// bs (increasing, the last +Inf), linear within its bucket; past the last
// finite bound, that bound. False when bs counted nothing.
func QuantileMs(bs []Bucket, q float64) (float64, bool) {
	if len(bs) == 0 || bs[len(bs)-1].Count <= 0 {
		return 0, false
	}
	rank := q * bs[len(bs)-1].Count
	lower, below := 0.0, 0.0
	for _, b := range bs {
		if b.Count >= rank {
			if math.IsInf(b.LE, 1) {
				return lower * 1000, true
			}
			frac := 1.0
			if in := b.Count - below; in > 0 {
				frac = (rank - below) / in
			}
			return (lower + (b.LE-lower)*frac) * 1000, true
		}
		lower, below = b.LE, b.Count
	}
	return lower * 1000, true
}
