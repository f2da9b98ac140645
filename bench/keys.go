package bench

import (
	"fmt"
	"math/rand/v2"
)

// chooser picks the partition of the next batch, as a producer's partitioner
// would for keyed records.
type chooser interface{ next() int32 }

type uniformKeys struct {
	r *rand.Rand
	n int
}

func (u uniformKeys) next() int32 { return int32(u.r.IntN(u.n)) }

type zipfKeys struct{ z *rand.Zipf }

func (z zipfKeys) next() int32 { return int32(z.z.Uint64()) }

// Keys are the distributions newChooser accepts.
var Keys = []string{"uniform", "zipf"}

// newChooser returns a partition chooser over n partitions. zipf (s = 1.1)
// makes partition 0 the hottest, with a long tail of cold partitions.
func newChooser(keys string, n int, seed uint64) (chooser, error) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	switch keys {
	case "uniform":
		return uniformKeys{r: r, n: n}, nil
	case "zipf":
		return zipfKeys{z: rand.NewZipf(r, 1.1, 1, uint64(n-1))}, nil
	}
	return nil, fmt.Errorf("bench: keys %q: want uniform or zipf", keys)
}
