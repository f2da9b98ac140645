package fileops

import (
	"fmt"
	"strconv"
)

// TmpSuffix marks a file being written under a temporary name: it never
// holds data anyone relies on, and the store that owns the directory may
// remove it at open.
const TmpSuffix = ".tmp"

// OffsetNameLen is the length of an offset name.
const OffsetNameLen = 20

// OffsetName is the name of a file that starts at offset off (>= 0).
func OffsetName(off int64) string { return fmt.Sprintf("%0*d", OffsetNameLen, off) }

// ParseOffsetName returns the offset an offset name stands for; ok is
// false for any other name (wrong length, a sign, a non-digit).
func ParseOffsetName(name string) (off int64, ok bool) {
	if len(name) != OffsetNameLen {
		return 0, false
	}
	for i := 0; i < len(name); i++ {
		if name[i] < '0' || name[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(name, 10, 64)
	return v, err == nil
}
