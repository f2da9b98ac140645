package dispatcher

import (
	"strings"
	"testing"

	"github.com/unilog/unilog/commitlog"
)

func TestParseQueueName(t *testing.T) {
	id := commitlog.TopicID{0: 0xAB, 15: 0x01}
	hexID := id.String()
	for _, tc := range []struct {
		name  string
		topic string
		id    commitlog.TopicID
	}{
		{"orders", "orders", commitlog.TopicID{}},
		{"orders@" + hexID, "orders", id},
		{"a@b@" + hexID, "a@b", id},
		{"@" + hexID, "", id},
		{"orders@" + strings.ToUpper(hexID), "orders@" + strings.ToUpper(hexID), commitlog.TopicID{}},
		{"orders@" + strings.Repeat("0", 32), "orders@" + strings.Repeat("0", 32), commitlog.TopicID{}},
		{"orders@" + hexID[:31] + "g", "orders@" + hexID[:31] + "g", commitlog.TopicID{}},
		{"orders@" + hexID[:30], "orders@" + hexID[:30], commitlog.TopicID{}},
	} {
		topic, got := ParseQueueName(tc.name)
		if topic != tc.topic || got != tc.id {
			t.Errorf("ParseQueueName(%q) = %q, %s; want %q, %s", tc.name, topic, got, tc.topic, tc.id)
		}
		if !tc.id.IsZero() && QueueName(topic, got) != tc.name {
			t.Errorf("QueueName(ParseQueueName(%q)) = %q", tc.name, QueueName(topic, got))
		}
	}
}
