package commitlog

import (
	"fmt"

	"github.com/unilog/unilog/internal/fileops"
)

// guard runs access, which loads from or stores into a mapped file,
// turning a fault (a media error, or a file truncated under the log) into
// an error wrapping ErrIO instead of a crash: see fileops.Guard.
func guard(access func()) error {
	if err := fileops.Guard(access); err != nil {
		return fmt.Errorf("%w: %w", ErrIO, err)
	}
	return nil
}
