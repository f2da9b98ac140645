// Package bytesize is the one grammar for byte sizes on unilog's command
// line: every flag that takes a size (the broker's --file-size, the bench's
// --message-size, ...) reads it through Parse, so a value that works for one
// command works for all of them.
//
// A size is a decimal number with an optional unit, case-insensitive:
// B; KiB, MiB, GiB, TiB (powers of 1024); KB, MB, GB, TB (powers of 1000);
// and K, M, G, T as short forms of the binary units, as in JVM flags. A
// fraction is accepted when it names a whole number of bytes (1.5GiB, 1.1KB;
// not 0.5B).
package bytesize

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"
)

// ErrSyntax is returned for a size that does not follow the grammar above.
var ErrSyntax = errors.New("want a number of bytes with an optional unit (KiB, MiB, GiB, TiB, KB, MB, GB, TB, K, M, G, T)")

// ErrRange is returned for a size outside the bounds a caller asks for.
var ErrRange = errors.New("size out of range")

// Longer suffixes first, so "MiB" is not read as "M" followed by junk.
var units = []struct {
	suffix string
	mult   int64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40},
	{"b", 1},
}

// Parse reads a size of zero or more bytes.
func Parse(s string) (int64, error) {
	num, mult := strings.TrimSpace(s), int64(1)
	lower := strings.ToLower(num)
	for _, u := range units {
		if strings.HasSuffix(lower, u.suffix) {
			num, mult = strings.TrimSpace(num[:len(num)-len(u.suffix)]), u.mult
			break
		}
	}
	if !isDecimal(num) {
		return 0, fmt.Errorf("size %q: %w", s, ErrSyntax)
	}
	// big.Rat keeps 1.1KB exactly 1100, where a float64 gives 1100.0000000000002.
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, fmt.Errorf("size %q: %w", s, ErrSyntax)
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	if !r.IsInt() {
		return 0, fmt.Errorf("size %q: not a whole number of bytes: %w", s, ErrSyntax)
	}
	n := r.Num()
	if !n.IsInt64() {
		return 0, fmt.Errorf("size %q: above %d bytes: %w", s, int64(math.MaxInt64), ErrRange)
	}
	return n.Int64(), nil
}

// ParseIn reads a size and refuses one outside [lo, hi].
func ParseIn(s string, lo, hi int64) (int64, error) {
	n, err := Parse(s)
	if err != nil {
		return 0, err
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("size %q: must be between %d and %d bytes: %w", s, lo, hi, ErrRange)
	}
	return n, nil
}

// isDecimal reports whether s is digits with at most one '.', and at least one
// digit: the only numbers Parse takes (big.Rat alone would also take "1/3",
// "1e3" and signs).
func isDecimal(s string) bool {
	digits, dots := 0, 0
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '.':
			dots++
		default:
			return false
		}
	}
	return digits > 0 && dots <= 1
}

// Format prints n with a binary unit and one decimal, e.g. 4.0 GiB; below
// 1 KiB it prints the bytes.
func Format(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
