package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCompareRunCPU: the broker's and the clients' CPU of each phase per GB
// and the cores both used while producing, and no client figure where the
// broker ran in this process (its CPU then counts the clients already).
func TestCompareRunCPU(t *testing.T) {
	at := time.Unix(1000, 0)
	sample := func(broker, self, wall float64) cpuSample {
		return cpuSample{broker: time.Duration(broker * float64(time.Second)), self: time.Duration(self * float64(time.Second)),
			wall: at.Add(time.Duration(wall * float64(time.Second)))}
	}
	for _, tc := range []struct {
		name          string
		separable     bool
		s0, s1, s2    cpuSample
		produced, got int64
		wantBroker    [2]float64 // s/GB in, out
		wantClient    *ClientCPU
		wantCores     float64
	}{
		{"child: clients apart", true, sample(10, 100, 0), sample(12, 103, 2.5), sample(13, 104, 4), 2e9, 5e8,
			[2]float64{1, 2}, &ClientCPU{ProduceS: 3, ConsumeS: 1, SPerGB: 1.5, SPerGBConsumed: 2}, 2},
		// In-process the server's CPU is this process's: self moves with it.
		{"in-process: not separable", false, sample(100, 100, 0), sample(104, 104, 2), sample(105, 105, 3), 1e9, 1e9,
			[2]float64{4, 1}, nil, 2},
		{"nothing produced", true, sample(0, 0, 0), sample(1, 1, 0), sample(1, 1, 0), 0, 0,
			[2]float64{0, 0}, &ClientCPU{ProduceS: 1}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r CompareRun
			r.Bytes = tc.produced
			r.setProduceCPU(tc.s0, tc.s1, tc.separable)
			r.setConsumeCPU(tc.s1, tc.s2, tc.got)
			if r.BrokerCPUSPerGB != tc.wantBroker[0] || r.BrokerCPUSPerGBConsumed != tc.wantBroker[1] {
				t.Errorf("broker s/GB %v / %v, want %v", r.BrokerCPUSPerGB, r.BrokerCPUSPerGBConsumed, tc.wantBroker)
			}
			switch {
			case (r.ClientCPU == nil) != (tc.wantClient == nil):
				t.Errorf("client CPU %+v, want %+v", r.ClientCPU, tc.wantClient)
			case r.ClientCPU != nil && *r.ClientCPU != *tc.wantClient:
				t.Errorf("client CPU %+v, want %+v", *r.ClientCPU, *tc.wantClient)
			}
			if r.CoresUsed != tc.wantCores {
				t.Errorf("cores used %v, want %v", r.CoresUsed, tc.wantCores)
			}
		})
	}
}

// TestCompareMarkdownClientCPU: the Markdown table has the client's columns,
// and says where they come from, or that they are not separable.
func TestCompareMarkdownClientCPU(t *testing.T) {
	for _, tc := range []struct {
		name     string
		run      CompareRun
		clientGC string
		want     []string
	}{
		{"child", CompareRun{System: "unilog", Flush: "async", Partitions: 1, Load: LoadPeak, Trial: 1, CPUSource: CPUChild,
			BrokerCPUSPerGB: 0.7, ClientCPU: &ClientCPU{SPerGB: 2.5, SPerGBConsumed: 1.25}, CoresUsed: 1.96}, "GOGC 400 under a soft memory limit of 2 GiB",
			[]string{"garbage collector at GOGC 400 under a soft memory limit of 2 GiB", "| client CPU s/GB in | client CPU s/GB out | cores used |", "| 0.7 | 0.0 | 2.5 | 1.2 | 1.96 |", "load generator's"}},
		{"in-process", CompareRun{System: "kfake", Flush: "memory", Partitions: 1, Load: LoadPeak, Trial: 1, CPUSource: CPUSelf,
			BrokerCPUSPerGB: 3.2, CoresUsed: 1.5}, "",
			[]string{"| 3.2 | 0.0 | - | - | 1.50 |", "not separable"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "BENCHMARKS.md")
			if err := WriteCompareMarkdown(path, []CompareRun{tc.run}, CompareInfo{Command: "unilog bench compare", Config: CompareConfig{ClientGC: tc.clientGC}}); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(b), w) {
					t.Errorf("missing %q in\n%s", w, b)
				}
			}
			if gc := strings.Contains(string(b), "garbage collector"); gc != (tc.clientGC != "") {
				t.Errorf("says the clients' GC: %v, want %v", gc, tc.clientGC != "")
			}
		})
	}
}
