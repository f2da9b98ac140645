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

func BenchmarkCombine(b *testing.B) {
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
