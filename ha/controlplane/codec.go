package controlplane

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/unilog/unilog/internal/framed"
)

// valueVersion is the version byte every value in the buckets starts with.
// A reader refuses any other version rather than guess at its layout.
const valueVersion = 1

const valueHeaderSize = 5

// ErrCorrupt reports a bucket value that fails its version or CRC check.
var ErrCorrupt = errors.New("ha: corrupt value")

// encodeValue frames v as: version (1 byte), CRC32C of the body (4 bytes,
// big endian), JSON body. JetStream checks its own storage, but the CRC
// also catches a value written by something other than unilog into our
// buckets, and the version lets the format change without a flag day.
func encodeValue(v any) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("ha: encode %T: %w", v, err)
	}
	b := make([]byte, valueHeaderSize, valueHeaderSize+len(body))
	b[0] = valueVersion
	binary.BigEndian.PutUint32(b[1:], framed.Checksum(body))
	return append(b, body...), nil
}

// decodeValue checks the frame written by encodeValue and unmarshals its
// body into v.
func decodeValue(b []byte, v any) error {
	if len(b) < valueHeaderSize {
		return fmt.Errorf("%w: %d bytes, shorter than the header", ErrCorrupt, len(b))
	}
	if b[0] != valueVersion {
		return fmt.Errorf("%w: unsupported version %d", ErrCorrupt, b[0])
	}
	body := b[valueHeaderSize:]
	if crc := framed.Checksum(body); crc != binary.BigEndian.Uint32(b[1:]) {
		return fmt.Errorf("%w: CRC mismatch", ErrCorrupt)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return nil
}
