package framed

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// ErrDamaged reports bytes that are not an intact frame of the expected
// kind: torn, bit-flipped, truncated, or another file altogether.
var ErrDamaged = errors.New("damaged")

// ErrNewerVersion reports an intact frame written by a newer build.
var ErrNewerVersion = errors.New("written by a newer version")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum is the CRC32C (Castagnoli) of b, the checksum of every unilog
// file and frame.
func Checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// Update adds b to a running Checksum crc.
func Update(crc uint32, b []byte) uint32 { return crc32.Update(crc, castagnoli, b) }

// Shape is where a frame keeps its CRC; see the package doc.
type Shape uint8

const (
	Sealed Shape = iota
	Prefixed
)

const (
	magicLen  = 4
	openLen   = magicLen + 2    // magic, version
	sealedLen = openLen + 4     // + trailing CRC
	prefixLen = openLen + 4 + 4 // + length, CRC
	maxBody   = 1<<32 - 1       // a Prefixed length is a uint32
)

// Format is one kind of framed file.
type Format struct {
	Name    string // in errors: "checkpoint", "flushed mark", ...
	Magic   string // exactly 4 bytes
	Version uint16 // the version this build writes and the newest it reads
	Oldest  uint16 // the oldest version it reads; 0 reads only Version
	Shape   Shape
}

// Overhead is the bytes a frame adds to its payload.
func (f Format) Overhead() int {
	if f.Shape == Prefixed {
		return prefixLen
	}
	return sealedLen
}

// Append appends the frame of payload to dst.
func (f Format) Append(dst, payload []byte) []byte {
	start := len(dst)
	if f.Shape == Prefixed {
		if uint64(len(payload)) > maxBody {
			panic(fmt.Sprintf("framed: %s: payload of %d bytes", f.Name, len(payload)))
		}
		dst = f.appendHead(dst)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(payload)))
		dst = binary.BigEndian.AppendUint32(dst, Checksum(payload))
		return append(dst, payload...)
	}
	return f.Seal(append(f.Open(dst), payload...), start)
}

// Open appends the head of a Sealed frame to dst, for a writer that
// appends the payload in place (no second copy of a large one) and then
// calls Seal with the frame's start, len(dst) before Open.
func (f Format) Open(dst []byte) []byte {
	if f.Shape != Sealed {
		panic(fmt.Sprintf("framed: %s: Open of a frame that is not Sealed", f.Name))
	}
	return f.appendHead(dst)
}

// Seal closes the Sealed frame Open began at dst[start:].
func (f Format) Seal(dst []byte, start int) []byte {
	return binary.BigEndian.AppendUint32(dst, Checksum(dst[start:]))
}

func (f Format) appendHead(dst []byte) []byte {
	if len(f.Magic) != magicLen {
		panic(fmt.Sprintf("framed: %s: magic %q is not %d bytes", f.Name, f.Magic, magicLen))
	}
	dst = append(dst, f.Magic...)
	return binary.BigEndian.AppendUint16(dst, f.Version)
}

// Decode checks that b is exactly one frame of f and returns its version
// and payload (aliasing b). Errors wrap ErrDamaged or ErrNewerVersion.
func (f Format) Decode(b []byte) (version uint16, payload []byte, err error) {
	if len(b) < f.Overhead() {
		return 0, nil, fmt.Errorf("%s: %d bytes, a frame takes at least %d: %w", f.Name, len(b), f.Overhead(), ErrDamaged)
	}
	if string(b[:magicLen]) != f.Magic {
		return 0, nil, fmt.Errorf("%s: magic %q, want %q: %w", f.Name, b[:magicLen], f.Magic, ErrDamaged)
	}
	var crc, want uint32
	if f.Shape == Prefixed {
		n := binary.BigEndian.Uint32(b[openLen:])
		if uint64(n) != uint64(len(b)-prefixLen) {
			return 0, nil, fmt.Errorf("%s: payload of %d bytes, %d present: %w", f.Name, n, len(b)-prefixLen, ErrDamaged)
		}
		payload = b[prefixLen:]
		crc, want = binary.BigEndian.Uint32(b[openLen+4:]), Checksum(payload)
	} else {
		payload = b[openLen : len(b)-4]
		crc, want = binary.BigEndian.Uint32(b[len(b)-4:]), Checksum(b[:len(b)-4])
	}
	if crc != want {
		return 0, nil, fmt.Errorf("%s: crc %08x, computed %08x: %w", f.Name, crc, want, ErrDamaged)
	}
	version = binary.BigEndian.Uint16(b[magicLen:])
	oldest := f.Oldest
	if oldest == 0 {
		oldest = f.Version
	}
	switch {
	case version > f.Version:
		return version, nil, fmt.Errorf("%s: version %d, this build reads %d to %d: %w", f.Name, version, oldest, f.Version, ErrNewerVersion)
	case version < oldest:
		return version, nil, fmt.Errorf("%s: version %d, this build reads %d to %d: %w", f.Name, version, oldest, f.Version, ErrDamaged)
	}
	return version, payload, nil
}
