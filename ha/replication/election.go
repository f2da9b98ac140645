package replication

import "slices"

// Candidate is a live node of a replica group as the election sees it.
type Candidate struct {
	Node   int32
	Group  string
	LogEnd int64 // the end of its commit log
}

// MayLead is the election rule: whether self may take a lapsed lease of
// its group after leader (the last lease holder), whose in-sync set was isr
// (known reports whether self saw it), among the live peers. Only a node
// the last leader had in sync may take it, and of those the one with the
// longest log (ties: the lowest node id), so the most caught-up in-sync
// follower takes over and no acknowledged record is lost. A node that held
// the newest lease itself may take it back. When the set is unknown, the
// longest log decides.
func MayLead(self Candidate, leader int32, isr []int32, known bool, peers []Candidate) bool {
	if leader == self.Node {
		return true
	}
	may := func(id int32) bool { return !known || slices.Contains(isr, id) }
	if !may(self.Node) {
		return false
	}
	for _, p := range peers {
		if p.Group != self.Group || p.Node == self.Node || p.Node == leader || !may(p.Node) {
			continue
		}
		if p.LogEnd > self.LogEnd || p.LogEnd == self.LogEnd && p.Node < self.Node {
			return false
		}
	}
	return true
}
