package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/unilog/unilog/internal/bytesize"
)

// WriteTable prints one row per configuration: the median of its trials
// with the range beside rates and latencies.
func WriteTable(w io.Writer, rep *Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	read := hasRead(rep)
	head := "layout\tpartitions\tflush\trun\tMB/s\trecords/s\tof disk\tp50 µs\tp99 µs\tp999 µs\tfiles\tmaps\tmapped\t"
	if read {
		head += "read 1 MB/s\tread all MB/s\t"
	}
	fmt.Fprintln(tw, head+"  note")
	for _, r := range rep.Rows {
		m := &r.Median
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%.0f%%\t%s\t%s\t%s\t%d\t%d\t%s\t",
			r.Layout, r.Partitions, r.Flush, runCell(&r), r.MBPerS, r.RecordsPerS, 100*r.FractionOfDisk(),
			r.P50US, r.P99US, r.P999US, m.OpenFiles, m.MapAreas, bytesize.Format(m.MappedBytes))
		if read {
			fmt.Fprint(tw, readCells(m.Read, "\t"))
		}
		fmt.Fprintln(tw, "  "+r.Note)
	}
	return tw.Flush()
}

// runCell names the kind of run, the number of trials and, for sustained
// runs, how much each wrote.
func runCell(r *Row) string {
	s := fmt.Sprintf("%s x%d", r.Kind, r.Trials)
	if r.Kind == KindSustained {
		s += " " + bytesize.Format(r.Median.Bytes)
	}
	return s
}

func hasRead(rep *Report) bool {
	for _, r := range rep.Results {
		if r.Read != nil {
			return true
		}
	}
	return false
}

func readCells(rr *ReadResult, sep string) string {
	if rr == nil {
		return "-" + sep + "-" + sep
	}
	mark := ""
	if !rr.Cold {
		mark = " (warm)"
	}
	one, all := "-", "-"
	if rr.OneSeconds > 0 {
		one = fmt.Sprintf("%.0f%s", rr.OneMBPerS, mark)
	}
	if rr.AllSeconds > 0 {
		all = fmt.Sprintf("%.0f%s", rr.AllMBPerS, mark)
	}
	return one + sep + all + sep
}

// WriteMarkdownTable prints the same rows as a Markdown table.
func WriteMarkdownTable(w io.Writer, rep *Report) {
	read := hasRead(rep)
	cols := []string{"layout", "partitions", "flush", "run", "MB/s median (min–max)", "records/s", "of disk", "p50 µs", "p99 µs", "p999 µs", "open files", "map areas", "mapped"}
	if read {
		cols = append(cols, "read 1 partition MB/s", "read all MB/s")
	}
	cols = append(cols, "stopped by / note")
	fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(cols, " | "), strings.Repeat("---:|", len(cols)))
	for _, r := range rep.Rows {
		m := &r.Median
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %.0f | %.0f%% | %.0f | %.0f | %.0f | %d | %d | %s | ",
			r.Layout, commas(int64(r.Partitions)), r.Flush, runCell(&r), r.MBPerS, r.RecordsPerS.Median, 100*r.FractionOfDisk(),
			r.P50US.Median, r.P99US.Median, r.P999US.Median, m.OpenFiles, m.MapAreas, bytesize.Format(m.MappedBytes))
		if read {
			fmt.Fprint(w, readCells(m.Read, " | "))
		}
		fmt.Fprintf(w, "%s |\n", strings.ReplaceAll(r.Note, "|", "/"))
	}
}

// WriteJSON writes the whole report: the disk probe, the dirty-page limit,
// the rows (median and range per configuration) and every trial.
func WriteJSON(path string, rep *Report) error { return writeJSONFile(path, rep) }

func joinNote(err, note string) string {
	switch {
	case err == "":
		return note
	case note == "":
		return err
	}
	return err + "; " + note
}
