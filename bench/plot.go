package bench

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// series is one line of a plot.
type series struct {
	name   string
	dashed bool
	xys    plotter.XYs
	// spans are optional error bars, one per point of xys: how far the
	// range of the trials reaches below and above the point.
	spans plotter.YErrors
}

// chart is a line plot with a logarithmic X axis.
type chart struct {
	title, x, y string
	lines       []series
	// ref is a horizontal reference line (0: none) named refName.
	ref     float64
	refName string
}

// collect groups points into named series in first-seen order.
type collect struct {
	order []string
	by    map[string]*series
}

func (c *collect) add(name string, dashed bool, x, y float64) {
	l := c.series(name, dashed)
	l.xys = append(l.xys, plotter.XY{X: x, Y: y})
}

// addSpread adds the median of s as the point and its min–max as the
// point's error bar.
func (c *collect) addSpread(name string, dashed bool, x float64, s Spread) {
	l := c.series(name, dashed)
	l.xys = append(l.xys, plotter.XY{X: x, Y: s.Median})
	l.spans = append(l.spans, struct{ Low, High float64 }{s.Median - s.Min, s.Max - s.Median})
}

func (c *collect) series(name string, dashed bool) *series {
	if c.by == nil {
		c.by = map[string]*series{}
	}
	s, ok := c.by[name]
	if !ok {
		s = &series{name: name, dashed: dashed}
		c.by[name] = s
		c.order = append(c.order, name)
	}
	return s
}

func (c *collect) lines() []series {
	out := make([]series, 0, len(c.order))
	for _, n := range c.order {
		out = append(out, *c.by[n])
	}
	return out
}

// save draws the chart to path; the format follows the extension (.svg,
// .png, .pdf).
func (c chart) save(path string) error {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".svg", ".png", ".pdf":
	default:
		return fmt.Errorf("bench: plot %s: want a .svg, .png or .pdf file", path)
	}
	if len(c.lines) == 0 {
		return fmt.Errorf("bench: plot %s: nothing to draw", path)
	}
	minX, maxX := 0.0, 0.0
	for _, s := range c.lines {
		for _, xy := range s.xys {
			if minX == 0 || xy.X < minX {
				minX = xy.X
			}
			maxX = max(maxX, xy.X)
		}
	}
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = c.title, c.x, c.y
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.X.Min, p.X.Max = minX/1.5, maxX*1.5
	p.Y.Min = 0
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	for i, s := range c.lines {
		idx := make([]int, len(s.xys))
		for j := range idx {
			idx[j] = j
		}
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(s.xys[a].X, s.xys[b].X) })
		xys := make(plotter.XYs, len(idx))
		for j, k := range idx {
			xys[j] = s.xys[k]
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return fmt.Errorf("bench: plot: %w", err)
		}
		line.Color, points.Color = plotutil.Color(i), plotutil.Color(i)
		points.Shape = plotutil.Shape(i)
		if s.dashed {
			line.Dashes = plotutil.Dashes(1)
		}
		p.Add(line, points)
		p.Legend.Add(s.name, line, points)
		if len(s.spans) == len(s.xys) {
			spans := make(plotter.YErrors, len(idx))
			for j, k := range idx {
				spans[j] = s.spans[k]
			}
			bars, err := plotter.NewYErrorBars(errorPoints{xys, spans})
			if err != nil {
				return fmt.Errorf("bench: plot: %w", err)
			}
			bars.Color = plotutil.Color(i)
			p.Add(bars)
		}
	}
	if c.ref > 0 {
		ref, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: c.ref}, {X: p.X.Max, Y: c.ref}})
		if err != nil {
			return fmt.Errorf("bench: plot: %w", err)
		}
		ref.Dashes = plotutil.Dashes(2)
		p.Add(ref)
		p.Legend.Add(c.refName, ref)
	}
	if err := p.Save(8*vg.Inch, 5*vg.Inch, path); err != nil {
		return fmt.Errorf("bench: plot %s: %w", path, err)
	}
	return nil
}

// WritePlot draws the median write throughput of the trials against
// partition count, one line per layout and flush policy, with the raw disk
// bandwidth as a reference line. Runs that stopped before writing anything
// and the sustained rows are left out.
func WritePlot(path string, rep *Report) error {
	var c collect
	for _, r := range rep.Rows {
		if r.Kind == KindSustained || r.Median.Records == 0 || r.Median.Seconds <= 0 {
			continue
		}
		c.add(r.Layout+" "+r.Flush, strings.HasPrefix(r.Layout, "kafka"), float64(r.Partitions), r.MBPerS.Median)
	}
	ch := chart{title: "Write throughput vs partition count (median of trials)", x: "partitions (log scale)", y: "MB/s (payload)", lines: c.lines()}
	if d := rep.Disk.MBPerS; d > 0 {
		ch.ref, ch.refName = d, fmt.Sprintf("raw disk %.0f MB/s", d)
	}
	return ch.save(path)
}

// errorPoints are points with their error bars, as plotter.NewYErrorBars
// takes them.
type errorPoints struct {
	plotter.XYs
	plotter.YErrors
}

// WriteComparePlot draws end-to-end produce throughput against partition
// count, one line per system and flush, from the full-speed runs: the
// median of the trials, with their min–max as error bars.
func WriteComparePlot(path string, runs []CompareRun) error {
	var c collect
	for _, r := range AggregateCompare(runs) {
		if r.Load != LoadPeak || r.MBPerS.Max == 0 {
			continue
		}
		c.addSpread(r.System+" "+r.Flush, r.System != SystemUnilog, float64(r.Partitions), r.MBPerS)
	}
	return chart{title: "End-to-end produce throughput vs partition count (median of trials, min–max bars)", x: "partitions (log scale)", y: "MB/s (payload)", lines: c.lines()}.save(path)
}

// latencyPercentiles are the points of a latency plot.
var latencyPercentiles = []float64{50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 99.999}

// WriteLatencyPlot draws the produce latency distribution: latency against
// 1/(1-percentile) on a log scale, so that the tail spreads out (x = 100 is
// p99, 1000 is p99.9).
func WriteLatencyPlot(path string, res ProduceResult) error {
	if res.hist.h == nil || res.hist.h.TotalCount() == 0 {
		return fmt.Errorf("bench: plot %s: no latencies recorded", path)
	}
	var c collect
	for _, q := range latencyPercentiles {
		c.add("produce latency", false, 1/(1-q/100), res.hist.quantile(q)/1000)
	}
	return chart{title: "Produce latency by percentile", x: "1/(1-percentile): 2 = p50, 100 = p99, 1000 = p99.9", y: "ms", lines: c.lines()}.save(path)
}
