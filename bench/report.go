package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
)

// WriteTable prints one row per run.
func WriteTable(w io.Writer, rep *Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	read := false
	for _, r := range rep.Results {
		read = read || r.Read != nil
	}
	head := "layout\tpartitions\tflush\tMB/s\trecords/s\tof disk\tp50 µs\tp99 µs\tp999 µs\tfiles\tmaps\tmapped\t"
	if read {
		head += "read 1 MB/s\tread all MB/s\t"
	}
	fmt.Fprintln(tw, head+"  error")
	for _, r := range rep.Results {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.0f\t%.0f\t%.0f%%\t%.0f\t%.0f\t%.0f\t%d\t%d\t%s\t",
			r.Layout, r.Partitions, r.Flush, r.MBPerS, r.RecordsPerS, 100*r.FractionOfDisk,
			r.P50US, r.P99US, r.P999US, r.OpenFiles, r.MapAreas, FormatBytes(r.MappedBytes))
		if read {
			fmt.Fprint(tw, readCells(r.Read, "\t"))
		}
		fmt.Fprintln(tw, "  "+joinNote(r.Error, r.Note))
	}
	return tw.Flush()
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
	read := false
	for _, r := range rep.Results {
		read = read || r.Read != nil
	}
	cols := []string{"layout", "partitions", "flush", "MB/s", "records/s", "of disk", "p50 µs", "p99 µs", "p999 µs", "open files", "map areas", "mapped"}
	if read {
		cols = append(cols, "read 1 partition MB/s", "read all MB/s")
	}
	cols = append(cols, "stopped by / note")
	fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(cols, " | "), strings.Repeat("---:|", len(cols)))
	for _, r := range rep.Results {
		fmt.Fprintf(w, "| %s | %s | %s | %.0f | %.0f | %.0f%% | %.0f | %.0f | %.0f | %d | %d | %s | ",
			r.Layout, commas(int64(r.Partitions)), r.Flush, r.MBPerS, r.RecordsPerS, 100*r.FractionOfDisk,
			r.P50US, r.P99US, r.P999US, r.OpenFiles, r.MapAreas, FormatBytes(r.MappedBytes))
		if read {
			fmt.Fprint(w, readCells(r.Read, " | "))
		}
		fmt.Fprintf(w, "%s |\n", strings.ReplaceAll(joinNote(r.Error, r.Note), "|", "/"))
	}
}

// WriteJSON writes an array with one object per run; every object carries
// the disk probe's bandwidth as disk_mb_per_s.
func WriteJSON(path string, rep *Report) error {
	b, err := json.MarshalIndent(rep.Results, "", "  ")
	if err != nil {
		return fmt.Errorf("bench: json: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("bench: json: %w", err)
	}
	return nil
}

func joinNote(err, note string) string {
	switch {
	case err == "":
		return note
	case note == "":
		return err
	}
	return err + "; " + note
}
