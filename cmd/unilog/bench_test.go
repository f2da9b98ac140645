package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestBenchStorageSmoke runs a tiny `unilog bench storage` over both layouts,
// two trials and a sustained row, and checks that every JSON field is there
// and sane and that every trial is kept.
func TestBenchStorageSmoke(t *testing.T) {
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "out.json")
	plotPath := filepath.Join(dir, "out.svg")
	mdPath := filepath.Join(dir, "out.md")
	var stdout bytes.Buffer
	app := &cli.App{Name: "unilog", Commands: []*cli.Command{benchCommand()}, Writer: &stdout, ErrWriter: &stdout}
	err := app.Run([]string{"unilog", "bench", "storage",
		"--layouts", "unified,kafka", "--partitions", "1,16", "--total", "2MiB", "--message-size", "1KiB",
		"--producers", "2", "--flush", "none,interval:10ms", "--segment-bytes", "1MiB", "--disk-probe", "4MiB",
		"--trials", "2", "--sustained-partitions", "4", "--sustained-total", "3MiB", "--sustained-max-run", "1m",
		"--dir", filepath.Join(dir, "data"), "--json", jsonPath, "--plot", plotPath, "--markdown", mdPath})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Rows    []map[string]any `json:"rows"`
		Results []map[string]any `json:"results"`
		Dirty   map[string]any   `json:"dirty_limit"`
		Disk    map[string]any   `json:"disk"`
		// One probe of the sustained size right before each sustained
		// run, which compares with it and not with the first probe.
		SustainedDisk []map[string]any `json:"sustained_disk"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	runs := rep.Results
	// (2 layouts x 2 partition counts x 2 flushes + 2 sustained) x 2 trials.
	if len(runs) != (2*2*2+2)*2 {
		t.Fatalf("%d runs, want 20", len(runs))
	}
	if len(rep.Rows) != 2*2*2+2 {
		t.Fatalf("%d rows, want 10", len(rep.Rows))
	}
	trials := map[string]int{}
	for _, r := range runs {
		trials[fmt.Sprint(r["kind"], r["layout"], r["flush"], r["partitions"])] += 1 << int(r["trial"].(float64))
	}
	for k, mask := range trials {
		if mask != 1<<1|1<<2 {
			t.Errorf("%s: trials %b, want 1 and 2 once each", k, mask)
		}
	}
	for i, row := range rep.Rows {
		s, _ := row["mb_per_s"].(map[string]any)
		lo, med, hi := s["min"].(float64), s["median"].(float64), s["max"].(float64)
		if row["trials"].(float64) != 2 || lo <= 0 || lo > med || med > hi {
			t.Errorf("row %d: %v", i, row)
		}
	}
	if b, _ := rep.Dirty["bytes"].(float64); b <= 0 {
		t.Errorf("dirty-page limit not read: %v", rep.Dirty)
	}
	fields := []string{"kind", "trial", "layout", "partitions", "message_size", "flush", "producers", "records", "bytes", "seconds",
		"mb_per_s", "records_per_s", "p50_us", "p99_us", "p999_us", "disk_mb_per_s", "fraction_of_disk",
		"open_files", "map_areas", "mapped_bytes", "log_bytes"}
	// 2 sustained rows x 2 trials, each probe of the 3 MiB they write.
	var sustainedMBs []float64
	for _, d := range rep.SustainedDisk {
		sustainedMBs = append(sustainedMBs, d["mb_per_s"].(float64))
		if d["bytes"] != float64(3<<20) || d["mb_per_s"].(float64) <= 0 {
			t.Errorf("sustained probe %v, want 3 MiB at a positive rate", d)
		}
	}
	if len(sustainedMBs) != 4 {
		t.Errorf("%d sustained probes, want 4", len(sustainedMBs))
	}
	seen := map[string]bool{}
	for i, r := range runs {
		for _, f := range fields {
			if _, ok := r[f]; !ok {
				t.Errorf("run %d: no field %q", i, f)
			}
		}
		if e, ok := r["error"]; ok {
			t.Errorf("run %d failed: %v", i, e)
		}
		num := func(f string) float64 { v, _ := r[f].(float64); return v }
		records, bytes, size := num("records"), num("bytes"), num("message_size")
		want := 2048.0
		if r["kind"] == "sustained" {
			want = 3072
		}
		if size != 1024 || records != want || math.Abs(records*size-bytes) > size {
			t.Errorf("run %d: %v records of %v bytes, %v bytes", i, records, size, bytes)
		}
		if num("seconds") <= 0 || num("mb_per_s") <= 0 || num("records_per_s") <= 0 || num("disk_mb_per_s") <= 0 || num("fraction_of_disk") <= 0 {
			t.Errorf("run %d: non-positive rates: %v", i, r)
		}
		if p50, p99, p999 := num("p50_us"), num("p99_us"), num("p999_us"); p50 <= 0 || p50 > p99 || p99 > p999 {
			t.Errorf("run %d: latencies p50 %v p99 %v p999 %v", i, p50, p99, p999)
		}
		if num("open_files") <= 0 || num("map_areas") <= 0 || num("mapped_bytes") <= 0 || num("log_bytes") < bytes {
			t.Errorf("run %d: resources %v files, %v maps, %v mapped, %v log bytes", i, r["open_files"], r["map_areas"], r["mapped_bytes"], r["log_bytes"])
		}
		k := r["layout"].(string) + "/" + r["flush"].(string)
		if r["kind"] == "sustained" {
			k += "/sustained"
			if !slices.Contains(sustainedMBs, num("disk_mb_per_s")) {
				t.Errorf("run %d: sustained run against %v MB/s, not one of the sustained probes %v", i, num("disk_mb_per_s"), sustainedMBs)
			}
		} else if num("disk_mb_per_s") != rep.Disk["mb_per_s"] {
			t.Errorf("run %d: against %v MB/s, not the first probe %v", i, num("disk_mb_per_s"), rep.Disk["mb_per_s"])
		}
		if f := num("log_mb_per_s") / num("disk_mb_per_s"); math.Abs(f-num("fraction_of_disk")) > 1e-9*f {
			t.Errorf("run %d: fraction of disk %v, want %v", i, num("fraction_of_disk"), f)
		}
		seen[k] = true
	}
	for _, k := range []string{"unified/none", "kafka/none", "unified/interval:10ms", "kafka/interval:10ms", "unified/none/sustained", "kafka/none/sustained"} {
		if !seen[k] {
			t.Errorf("no run for %s", k)
		}
	}
	for _, p := range []string{plotPath, mdPath} {
		if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
			t.Errorf("%s not written: %v", p, err)
		}
	}
	if md, _ := os.ReadFile(mdPath); !bytes.Contains(md, []byte("| The same over a sustained run's size, right before each sustained run | **")) ||
		!bytes.Contains(md, []byte("against an O_DIRECT probe of the same 3.0 MiB")) {
		t.Errorf("markdown does not give the sustained probes:\n%s", md)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "data")); len(ents) != 0 {
		t.Errorf("run directories left behind: %v", ents)
	}
	if !bytes.Contains(stdout.Bytes(), []byte("partitions")) {
		t.Errorf("no table on stdout:\n%s", stdout.String())
	}
}

func TestShellLine(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"unilog", "bench", "--flush", "async,sync"}, "unilog bench --flush async,sync"},
		{[]string{"unilog", "--section", "End to end at high partition counts"}, "unilog --section 'End to end at high partition counts'"},
		{[]string{"unilog", "--limit-partitions", ""}, "unilog --limit-partitions ''"},
		{[]string{"it's"}, `'it'\''s'`},
	} {
		if got := shellLine(c.args); got != c.want {
			t.Errorf("shellLine(%q) = %s, want %s", c.args, got, c.want)
		}
	}
}
