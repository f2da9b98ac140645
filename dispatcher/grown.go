package dispatcher

import "github.com/unilog/unilog/consumequeue"

// grown lists the queues that grew since their waiters were last woken,
// each once. A partition's slot in the queue cache carries the round in
// which its queue was last listed, so listing costs a compare per record
// indexed, where a map keyed by queue ID hashed the topic name of every
// record while anybody watched.
type grown struct {
	round  uint64 // the round being listed; from 1, as a new slot's grewIn is 0
	queues []*consumequeue.Queue
}

func newGrown() grown { return grown{round: 1} }

// mark lists the queue of slot, unless it is listed already.
func (g *grown) mark(s *queueSlot) {
	if s.grewIn != g.round {
		s.grewIn = g.round
		g.queues = append(g.queues, s.q)
	}
}

// next empties the list and starts a new round.
func (g *grown) next() {
	clear(g.queues)
	g.queues = g.queues[:0]
	g.round++
}
