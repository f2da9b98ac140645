package dispatcher

import "github.com/unilog/unilog/commitlog"

// liveCache remembers the incarnation Options.Live last named live, for the
// records after it: Live asks the topic metadata (in the broker a lookup
// that copies the topic's description), and consecutive records mostly
// share a topic. An answer serves at most publishEvery records, and
// DispatchTo forgets it when a pass starts: a topic deleted or created
// again in the meantime is seen a few thousand records later at most, as
// if those records had been read a moment earlier. Only "live" is
// remembered; a record of any other incarnation asks Live again.
type liveCache struct {
	topic string
	id    commitlog.TopicID
	left  int // records the answer may still serve
}

// live reports whether id is the live incarnation of topic, as the cache
// last heard.
func (c *liveCache) live(topic string, id commitlog.TopicID) bool {
	if c.left <= 0 || c.id != id || c.topic != topic {
		return false
	}
	c.left--
	return true
}

// remember records that id is the live incarnation of topic, as Live just
// answered for a record: the answer serves publishEvery records with it.
func (c *liveCache) remember(topic string, id commitlog.TopicID) {
	c.topic, c.id, c.left = topic, id, publishEvery-1
}

// forget drops the remembered answer.
func (c *liveCache) forget() { *c = liveCache{} }
