package bytesize

import (
	"errors"
	"math"
	"strconv"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  error
	}{
		{in: "1048576", want: 1 << 20},
		{in: "0", want: 0},
		{in: "64mib", want: 64 << 20},
		{in: "512KiB", want: 512 << 10},
		{in: "2TiB", want: 2 << 40},
		{in: "1GB", want: 1e9},
		{in: "10kb", want: 10e3},
		{in: "100B", want: 100},
		{in: "512M", want: 512 << 20},
		{in: "4g", want: 4 << 30},
		{in: " 16 KiB ", want: 16 << 10},
		{in: "1.5GiB", want: 3 << 29},
		{in: "1.1KB", want: 1100},
		{in: "9223372036854775807", want: math.MaxInt64},
		{in: "0.5B", err: ErrSyntax},
		{in: "1.1KiB", err: ErrSyntax},
		{in: "-1MiB", err: ErrSyntax},
		{in: "+1", err: ErrSyntax},
		{in: "1e3", err: ErrSyntax},
		{in: "1/2GiB", err: ErrSyntax},
		{in: "NaN", err: ErrSyntax},
		{in: "inf", err: ErrSyntax},
		{in: "1..2", err: ErrSyntax},
		{in: ".", err: ErrSyntax},
		{in: "GiB", err: ErrSyntax},
		{in: "", err: ErrSyntax},
		{in: "10PiB", err: ErrSyntax},
		{in: "9223372036854775808", err: ErrRange},
		{in: "9000000TiB", err: ErrRange},
	} {
		got, err := Parse(tc.in)
		if !errors.Is(err, tc.err) || got != tc.want {
			t.Errorf("Parse(%q) = %d, %v; want %d, %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestParseIn(t *testing.T) {
	for _, tc := range []struct {
		in     string
		lo, hi int64
		want   int64
		err    error
	}{
		{in: "100MiB", lo: 1, hi: math.MaxInt32, want: 100 << 20},
		{in: "2GiB", lo: 1, hi: math.MaxInt32, err: ErrRange},
		{in: "0", lo: 1, hi: math.MaxInt64, err: ErrRange},
		{in: "x", lo: 1, hi: math.MaxInt64, err: ErrSyntax},
	} {
		got, err := ParseIn(tc.in, tc.lo, tc.hi)
		if !errors.Is(err, tc.err) || got != tc.want {
			t.Errorf("ParseIn(%q, %d, %d) = %d, %v; want %d, %v", tc.in, tc.lo, tc.hi, got, err, tc.want, tc.err)
		}
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		in   int64
		want string
	}{
		{0, "0 B"}, {1023, "1023 B"}, {1 << 10, "1.0 KiB"}, {3 << 19, "1.5 MiB"}, {4 << 30, "4.0 GiB"},
	} {
		if got := Format(tc.in); got != tc.want {
			t.Errorf("Format(%d) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzParse: no input panics, a parsed size is never negative, and its plain
// byte count parses back to itself.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		n, err := Parse(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("Parse(%q) = %d", s, n)
		}
		if back, err := Parse(strconv.FormatInt(n, 10)); err != nil || back != n {
			t.Fatalf("Parse(%q) = %d, but %d parses as %d, %v", s, n, n, back, err)
		}
	})
}
