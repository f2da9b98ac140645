package bench

import (
	"strings"
	"testing"
)

func TestKafkaClientValidate(t *testing.T) {
	ok := KafkaClient{Brokers: []string{"127.0.0.1:9092"}, Topic: "t", Acks: -1}
	for _, tc := range []struct {
		name string
		edit func(*KafkaClient)
		err  string
	}{
		{"defaults", func(*KafkaClient) {}, ""},
		{"zstd", func(c *KafkaClient) { c.Compression = "zstd" }, ""},
		{"none", func(c *KafkaClient) { c.Compression = "none" }, ""},
		{"unknown codec", func(c *KafkaClient) { c.Compression = "brotli" }, "compression"},
		{"no brokers", func(c *KafkaClient) { c.Brokers = nil }, "no brokers"},
		{"acks", func(c *KafkaClient) { c.Acks = 2 }, "acks"},
	} {
		c := ok
		tc.edit(&c)
		err := c.validate()
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
		}
	}
}
