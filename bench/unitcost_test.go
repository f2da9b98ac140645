package bench

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

func TestProbeUnitCosts(t *testing.T) {
	dir := t.TempDir()
	u, err := ProbeUnitCosts(dir)
	if err != nil {
		t.Fatal(err)
	}
	for name, d := range map[string]time.Duration{"syscall": u.Syscall, "anonymous page": u.AnonPage, "file page": u.FilePage, "page cache page": u.CachePage} {
		if d <= 0 {
			t.Errorf("%s cost %v, want a positive duration", name, d)
		}
	}
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("the probe left %d files in its directory, the first %s", len(left), left[0].Name())
	}
}

func TestProbeUnitCostsMissingDir(t *testing.T) {
	if _, err := ProbeUnitCosts(t.TempDir() + "/missing"); err == nil {
		t.Fatal("a probe in a missing directory succeeded")
	}
}

func TestWriteMachineRowsCosts(t *testing.T) {
	costs := UnitCosts{Syscall: 1100 * time.Nanosecond, AnonPage: 13 * time.Microsecond, FilePage: 1900 * time.Nanosecond, CachePage: 11200 * time.Nanosecond}
	for _, tc := range []struct {
		name string
		m    Machine
		want string
	}{
		{"measured", Machine{Costs: costs}, "a system call (getppid) 1.10 µs; the first touch of a fresh anonymous 4 KiB page 13.00 µs; mapping a cached file page by a read fault 1.90 µs per 4 KiB page (medians of 5 rounds over 32 MiB); a new page of the page cache written 11.20 µs per 4 KiB page (one new file of 256 MiB, written once)"},
		{"failed", Machine{CostsErr: errors.New("no space left")}, "| The kernel's unit costs | not measured: no space left |"},
		{"absent", Machine{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			WriteMachineRows(&b, tc.m)
			got := b.String()
			if tc.want == "" {
				if strings.Contains(got, "unit costs") {
					t.Errorf("a machine without costs got a costs row:\n%s", got)
				}
				return
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("table lacks %q:\n%s", tc.want, got)
			}
		})
	}
}
