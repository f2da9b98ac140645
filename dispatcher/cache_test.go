package dispatcher

import (
	"testing"

	"github.com/unilog/unilog/commitlog"
)

func TestQueueCache(t *testing.T) {
	c := newQueueCache()
	id := commitlog.TopicID{7}
	a := c.topic("t", id)
	if a.name != QueueName("t", id) {
		t.Errorf("name %q, want %q", a.name, QueueName("t", id))
	}
	if b := c.topic("t", commitlog.TopicID{}); b == a || b.name != "t" {
		t.Errorf("the zero incarnation shares an entry or is named %q", b.name)
	}
	if c.topic("t", id) != a {
		t.Error("a second lookup of an incarnation made a new entry")
	}
	c.forget("t", id)
	if c.topic("t", id) == a {
		t.Error("a forgotten incarnation's entry came back")
	}
}
