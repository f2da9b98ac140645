package broker

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
