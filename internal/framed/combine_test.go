package framed

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestCombine checks Combine against the checksum of the joined bytes at
// every split of inputs of the sizes around the combination's powers.
func TestCombine(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 7, 8, 9, 63, 64, 65, 1000, 4096, 16411, 1 << 20} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		whole := Checksum(b)
		splits := []int{0, n / 3, n / 2, n}
		if n > 0 {
			splits = append(splits, 1, n-1)
		}
		for _, k := range splits {
			if got := Combine(Checksum(b[:k]), Checksum(b[k:]), int64(n-k)); got != whole {
				t.Errorf("%d bytes split at %d: Combine = %08x, Checksum = %08x", n, k, got, whole)
			}
		}
	}
}

// TestX8nModP checks the tables' shift against the bit-by-bit one
// (zlib's) for lengths up to 2^40, past the last table's reach, where no
// buffer could be checksummed whole.
func TestX8nModP(t *testing.T) {
	ref := func(n int64) uint32 {
		p, x := one, uint32(1)<<23 // x^0, x^8
		for ; n != 0; n >>= 1 {
			if n&1 != 0 {
				p = multModP(x, p)
			}
			x = multModP(x, x)
		}
		return p
	}
	rng := rand.New(rand.NewPCG(3, 4))
	ns := []int64{0, 1, 1<<powBits - 1, 1 << powBits, 1<<(2*powBits) - 1, 1 << (2 * powBits), 1<<(3*powBits) - 1, 1 << (3 * powBits), 1<<40 - 1}
	for range 2000 {
		ns = append(ns, rng.Int64N(1<<40)>>rng.IntN(40))
	}
	for _, n := range ns {
		if got, want := x8nModP(n), ref(n); got != want {
			t.Fatalf("x8nModP(%d) = %08x, bit by bit %08x", n, got, want)
		}
	}
}

func BenchmarkCombine(b *testing.B) {
	// Lengths as a broker's batches have them, all different, so that
	// the branch predictor cannot learn one.
	rng := rand.New(rand.NewPCG(5, 6))
	lens := make([]int64, 1024)
	for i := range lens {
		lens[i] = 4<<10 + rng.Int64N(60<<10)
	}
	b.Run("combine/varied", func(b *testing.B) {
		var c uint32
		for i := range b.N {
			c = Combine(c, 1, lens[i%len(lens)])
		}
		_ = c
	})
	for _, n := range []int{1 << 10, 16 << 10, 1 << 20} {
		buf := make([]byte, n)
		b.Run(fmt.Sprintf("combine/%d", n), func(b *testing.B) {
			var c uint32
			for range b.N {
				c = Combine(c, 1, int64(n))
			}
			_ = c
		})
		b.Run(fmt.Sprintf("checksum/%d", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for range b.N {
				Checksum(buf)
			}
		})
	}
}
