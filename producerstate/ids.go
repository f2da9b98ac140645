package producerstate

import "sync"

// idBlock is how many producer ids one metadata write reserves.
const idBlock = 1000

// Reserver durably reserves producer ids: the cluster metadata.
type Reserver interface {
	// ReserveProducerIDs durably reserves n ids and returns the first.
	ReserveProducerIDs(n int64) (first int64, err error)
}

// IDs hands out producer ids from durably reserved blocks.
type IDs struct {
	r Reserver

	mu        sync.Mutex
	next, end int64
}

// NewIDs hands out ids reserved through r.
func NewIDs(r Reserver) *IDs { return &IDs{r: r} }

// Allocate returns an id never handed out before, by this process or any
// earlier one on the same metadata.
func (p *IDs) Allocate() (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next == p.end {
		first, err := p.r.ReserveProducerIDs(idBlock)
		if err != nil {
			return 0, err
		}
		p.next, p.end = first, first+idBlock
	}
	id := p.next
	p.next++
	return id, nil
}
