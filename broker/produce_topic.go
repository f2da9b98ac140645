package broker

// What a produce resolves once per topic of a request rather than once
// per partition: a client writing to 10,000 partitions sends thousands
// of one-record batches of one topic per request. A fetch asks its
// partitions' leadership the same way.

// topicLeader is a Cluster that answers leads for the partitions of a
// topic at once (the control plane's): a produce to 10,000 partitions
// asked PartitionLeader once per partition, 7% of the broker's samples.
type topicLeader interface {
	// LeadsTopic reports, as of the call, which partitions of topic this
	// node leads and may write.
	LeadsTopic(topic string) func(partition int32) bool
}

// topicLeads returns whether this broker leads each partition of topic,
// resolved once for the partitions of one request.
func (b *Broker) topicLeads(topic string) func(partition int32) bool {
	if tl, ok := b.cfg.Cluster.(topicLeader); ok {
		return tl.LeadsTopic(topic)
	}
	return func(p int32) bool { return b.leads(topic, p) }
}

// topicFence is a Moves that answers which partitions of a topic a move
// has fenced at once (the control plane's): a produce to 10,000
// partitions asked Move once per partition, 1-3% of the broker's samples.
type topicFence interface {
	// FencedInTopic reports, as of the call, which partitions of topic a
	// move stopped taking produce here.
	FencedInTopic(topic string) func(partition int32) bool
}

// topicFenced returns whether a move stopped produce to each partition of
// topic (produceFenced), resolved once for the partitions of one request;
// asked under topicMu, so a fence stopProducing waits out covers the
// request's appends.
func (b *Broker) topicFenced(topic string) func(partition int32) bool {
	if tf, ok := b.cfg.Moves.(topicFence); ok {
		return tf.FencedInTopic(topic)
	}
	return func(p int32) bool { return b.produceFenced(topic, p) }
}

// produceLimits are the configs of a topic every batch of a produce is
// held to, read once per topic of a request: per batch, the config
// lookups were 3% of the broker's samples at 10,000 partitions.
type produceLimits struct {
	maxMessageBytes int32
	logAppendTime   bool // message.timestamp.type=LogAppendTime
}

func (b *Broker) produceLimits(meta TopicMeta) produceLimits {
	v, _ := b.topicConfig(meta, cfgTimestampType)
	return produceLimits{maxMessageBytes: b.maxMessageBytes(meta), logAppendTime: v == "LogAppendTime"}
}

// maxAppendGroup bounds the batches of a request checked, appended and
// recorded together (appendProduced). A request to 10,000 partitions
// holds thousands of one-record batches, several MB: appended as one,
// its producer states, once checked, and its bytes, once encoded, were
// out of the cache again by the time they were recorded and written.
// Groups of 256 batches took the broker from 4.4-4.6 to 3.7-3.9 s of CPU
// per GB produced there (perf: the page-cache copy of the write 16-17%
// of the samples -> 3-4%, encodeBatch 24-26% -> 13-15%); 64 and 1,024
// measured the same as 256 within the noise.
const maxAppendGroup = 256
