package fileops

import (
	"math"
	"testing"
)

func TestOffsetName(t *testing.T) {
	for _, off := range []int64{0, 1, 1 << 30, math.MaxInt64} {
		name := OffsetName(off)
		if len(name) != OffsetNameLen {
			t.Fatalf("OffsetName(%d) = %q: %d characters", off, name, len(name))
		}
		if got, ok := ParseOffsetName(name); !ok || got != off {
			t.Fatalf("ParseOffsetName(%q) = %d, %v; want %d", name, got, ok, off)
		}
	}
	if OffsetName(1<<30) != "00000000001073741824" {
		t.Fatalf("OffsetName(1<<30) = %q", OffsetName(1<<30))
	}
}

func TestParseOffsetNameRejects(t *testing.T) {
	for _, name := range []string{
		"",
		"0",
		"0000000000000000000",   // 19 digits
		"000000000000000000000", // 21 digits
		"-0000000000000000001",
		"+0000000000000000001",
		"0000000000000000000a",
		"00000000000000000000.tmp",
		"99999999999999999999", // beyond int64
	} {
		if off, ok := ParseOffsetName(name); ok {
			t.Errorf("ParseOffsetName(%q) = %d, ok; want rejected", name, off)
		}
	}
}
