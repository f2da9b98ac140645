package bench

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// WritePlot draws the median write throughput of the trials against
// partition count on a log scale,
// one line per layout and flush policy, with the raw disk bandwidth as a
// reference line. The format follows the extension (.svg, .png, .pdf).
// Runs that stopped before writing anything are left out.
func WritePlot(path string, rep *Report) error {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".svg", ".png", ".pdf":
	default:
		return fmt.Errorf("bench: plot %s: want a .svg, .png or .pdf file", path)
	}
	type key struct{ layout, flush string }
	series := map[key]plotter.XYs{}
	var order []key
	minX, maxX := 0.0, 0.0
	for _, r := range rep.Rows {
		if r.Kind == KindSustained || r.Median.Records == 0 || r.Median.Seconds <= 0 {
			continue
		}
		k := key{r.Layout, r.Flush}
		if _, ok := series[k]; !ok {
			order = append(order, k)
		}
		x := float64(r.Partitions)
		series[k] = append(series[k], plotter.XY{X: x, Y: r.MBPerS.Median})
		if minX == 0 || x < minX {
			minX = x
		}
		maxX = max(maxX, x)
	}
	if len(order) == 0 {
		return fmt.Errorf("bench: plot %s: no run wrote anything", path)
	}
	p := plot.New()
	p.Title.Text = "Write throughput vs partition count"
	p.X.Label.Text = "partitions (log scale)"
	p.Y.Label.Text = "MB/s (payload)"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.X.Min, p.X.Max = minX/1.5, maxX*1.5
	p.Y.Min = 0
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	for i, k := range order {
		xys := series[k]
		slices.SortFunc(xys, func(a, b plotter.XY) int { return int(a.X - b.X) })
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return fmt.Errorf("bench: plot: %w", err)
		}
		line.Color, points.Color = plotutil.Color(i), plotutil.Color(i)
		points.Shape = plotutil.Shape(i)
		if strings.HasPrefix(k.layout, "kafka") {
			line.Dashes = plotutil.Dashes(1)
		}
		p.Add(line, points)
		p.Legend.Add(k.layout+" "+k.flush, line, points)
	}
	if d := rep.Disk.MBPerS; d > 0 {
		ref, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: d}, {X: p.X.Max, Y: d}})
		if err != nil {
			return fmt.Errorf("bench: plot: %w", err)
		}
		ref.Dashes = plotutil.Dashes(2)
		p.Add(ref)
		p.Legend.Add(fmt.Sprintf("raw disk %.0f MB/s", d), ref)
	}
	if err := p.Save(8*vg.Inch, 5*vg.Inch, path); err != nil {
		return fmt.Errorf("bench: plot %s: %w", path, err)
	}
	return nil
}
