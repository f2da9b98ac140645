package framed

// Combine returns the Checksum of a||b from crcA = Checksum(a),
// crcB = Checksum(b) and lenB = len(b), without the bytes (zlib's
// crc32_combine). A CRC is linear over GF(2): appending lenB bytes to a
// multiplies a's register by x^(8*lenB) modulo the polynomial, and b's
// CRC adds in. The multiplication costs O(log lenB) products of 32-bit
// polynomials, so a caller that already holds the CRC of a long suffix
// (a Kafka batch's verified CRC) checksums the whole without reading it
// again.
func Combine(crcA, crcB uint32, lenB int64) uint32 {
	if lenB <= 0 {
		return crcA
	}
	return multModP(x8nModP(lenB), crcA) ^ crcB
}

// castagnoliReversed is the Castagnoli polynomial, bit-reversed as the
// table-driven CRC shifts it.
const castagnoliReversed = 0x82f63b78

// multModP is a*b modulo the polynomial, both reflected (bit 31 is x^0).
func multModP(a, b uint32) uint32 {
	var p uint32
	for m := uint32(1) << 31; m != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
			if a&(m-1) == 0 {
				break
			}
		}
		if b&1 != 0 {
			b = b>>1 ^ castagnoliReversed
		} else {
			b >>= 1
		}
	}
	return p
}

// x2nTable[k] is x^(2^k) modulo the polynomial.
var x2nTable = func() (t [32]uint32) {
	p := uint32(1) << 30 // x^1
	for k := range t {
		t[k] = p
		p = multModP(p, p)
	}
	return t
}()

// x8nModP is x^(8n) modulo the polynomial: the shift of n bytes.
func x8nModP(n int64) uint32 {
	p := uint32(1) << 31 // x^0
	for k := 3; n != 0; n, k = n>>1, k+1 {
		if n&1 != 0 {
			p = multModP(x2nTable[k&31], p)
		}
	}
	return p
}
