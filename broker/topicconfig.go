package broker

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/store"
)

// Per-topic configs. A topic's own configs (TopicMeta.Configs, set by
// CreateTopics, AlterConfigs and IncrementalAlterConfigs) override the
// broker's defaults; a config not in topicConfigDefs is INVALID_CONFIG, and
// so is a value the design cannot honour, with a message saying why:
//
//	cleanup.policy          delete only: compaction rewrites a partition's log,
//	                        and here partitions share the commit log's files
//	compression.type        producer only: batches are stored as sent
//	max.message.bytes       enforced on produce (MESSAGE_TOO_LARGE)
//	message.timestamp.type  CreateTime, or LogAppendTime: the batch's max
//	                        timestamp is stamped with the broker's time on
//	                        produce (and the CRC redone), as Kafka does
//	min.insync.replicas     acks=-1 produces are refused (NOT_ENOUGH_REPLICAS,
//	                        nothing stored) while fewer replicas are in sync
//	retention.ms            logical: see "Retention"; at most the commit log's
//	                        own retention, which deletes files older than it
//	retention.bytes         logical, per partition: see "Retention"
type topicConfigDef struct {
	name string
	typ  kmsg.ConfigType
	// def is the broker's value, reported as DEFAULT_CONFIG.
	def func(b *Broker) string
	// check refuses a value the broker cannot honour.
	check func(v string) error
}

// Topic config names.
const (
	cfgCleanupPolicy   = "cleanup.policy"
	cfgCompression     = "compression.type"
	cfgMaxMessageBytes = "max.message.bytes"
	cfgTimestampType   = "message.timestamp.type"
	cfgMinInsync       = "min.insync.replicas"
	cfgRetentionMs     = "retention.ms"
	cfgRetentionBytes  = "retention.bytes"
)

// logRetentionMs is the commit log's retention age, the most a topic can
// keep a record: the log deletes whole files older than it.
var logRetentionMs = store.DefaultRetentionAge.Milliseconds()

// topicConfigDefs are the topic configs, sorted by name as DescribeConfigs
// lists them.
var topicConfigDefs = []topicConfigDef{
	{cfgCleanupPolicy, kmsg.ConfigTypeList, fixed("delete"), func(v string) error {
		if strings.Contains(v, "compact") {
			return errors.New("cleanup.policy=compact is not supported: compaction rewrites a partition's log keeping the last record of each key, and here every partition's records share the commit log's files, which are only ever deleted whole")
		}
		return oneOf(v, "delete")
	}},
	{cfgCompression, kmsg.ConfigTypeString, fixed("producer"), func(v string) error {
		if v != "producer" {
			return errors.New("compression.type must be producer: batches are stored and served exactly as the producer sent them, never recompressed")
		}
		return nil
	}},
	{cfgMaxMessageBytes, kmsg.ConfigTypeInt, func(b *Broker) string { return strconv.Itoa(int(b.cfg.MaxMessageBytes)) }, intIn(0, 1<<31-1)},
	{cfgTimestampType, kmsg.ConfigTypeString, fixed("CreateTime"), func(v string) error { return oneOf(v, "CreateTime", "LogAppendTime") }},
	{cfgMinInsync, kmsg.ConfigTypeInt, fixed("1"), intIn(1, 1<<31-1)},
	{cfgRetentionBytes, kmsg.ConfigTypeLong, fixed("-1"), intIn(-1, 1<<63-1)},
	{cfgRetentionMs, kmsg.ConfigTypeLong, fixed(strconv.FormatInt(logRetentionMs, 10)), func(v string) error {
		if err := intIn(0, 1<<63-1)(v); err != nil {
			return err
		}
		if n, _ := strconv.ParseInt(v, 10, 64); n > logRetentionMs {
			return fmt.Errorf("retention.ms %d is longer than the commit log keeps any record (%d ms): partitions share its files, which go by its own retention", n, logRetentionMs)
		}
		return nil
	}},
}

func fixed(v string) func(*Broker) string { return func(*Broker) string { return v } }

func oneOf(v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return fmt.Errorf("%q is not one of %s", v, strings.Join(allowed, ", "))
}

func intIn(lo, hi int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("%q is not an integer in [%d, %d]", v, lo, hi)
		}
		return nil
	}
}

func lookupTopicConfig(name string) (topicConfigDef, bool) {
	for _, d := range topicConfigDefs {
		if d.name == name {
			return d, true
		}
	}
	return topicConfigDef{}, false
}

// errConfig marks a config refused (INVALID_CONFIG).
var errConfig = errors.New("invalid config")

// checkTopicConfig validates one config; the error, wrapping errConfig,
// is the answer's message.
func checkTopicConfig(name string, value *string) error {
	d, ok := lookupTopicConfig(name)
	switch {
	case !ok:
		return fmt.Errorf("%w: unknown topic config %q", errConfig, name)
	case value == nil:
		return fmt.Errorf("%w: config %s has no value", errConfig, name)
	}
	if err := d.check(*value); err != nil {
		return fmt.Errorf("%w: %s: %w", errConfig, name, err)
	}
	return nil
}

// topicConfig is the config's value for the topic and whether the topic
// sets it itself.
func (b *Broker) topicConfig(t TopicMeta, name string) (string, bool) {
	if v, ok := t.Configs[name]; ok {
		return v, true
	}
	d, _ := lookupTopicConfig(name)
	return d.def(b), false
}

// configInt is an integer config's value for the topic; values were
// checked when stored.
func (b *Broker) configInt(t TopicMeta, name string) int64 {
	v, _ := b.topicConfig(t, name)
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}

// maxMessageBytes is the largest batch the topic takes.
func (b *Broker) maxMessageBytes(t TopicMeta) int32 {
	if _, own := t.Configs[cfgMaxMessageBytes]; !own {
		return b.cfg.MaxMessageBytes
	}
	return int32(b.configInt(t, cfgMaxMessageBytes))
}

// errNoChange marks an alteration that would store what is stored.
var errNoChange = errors.New("broker: configs unchanged")

// alterTopicConfigs replaces the topic's own configs with what change
// makes of them (own is a copy change may modify), each checked, and
// stores them unless validateOnly. It
// answers a Kafka error and message. CreateTopics, AlterConfigs and
// IncrementalAlterConfigs share it; the new values apply to the next
// request that reads the topic's metadata.
func (b *Broker) alterTopicConfigs(name string, validateOnly bool, change func(own map[string]string) (map[string]string, error)) (*kerr.Error, string) {
	meta, ok := b.meta.Topic(name)
	if !ok {
		return kerr.UnknownTopicOrPartition, "unknown topic " + name
	}
	if isInternalTopic(name) {
		return kerr.InvalidRequest, "the configs of internal topics are the broker's"
	}
	err := b.meta.UpdateTopic(name, func(t *TopicMeta) error {
		if t.ID != meta.ID {
			return ErrUnknownTopic // deleted and created again meanwhile
		}
		next, err := change(t.Configs)
		if err != nil {
			return err
		}
		for k, v := range next {
			if err := checkTopicConfig(k, &v); err != nil {
				return err
			}
		}
		if validateOnly {
			return errNoChange
		}
		t.Configs = next
		return nil
	})
	switch {
	case err == nil || errors.Is(err, errNoChange):
		return nil, ""
	case errors.Is(err, ErrUnknownTopic):
		return kerr.UnknownTopicOrPartition, err.Error()
	case errors.Is(err, errConfig):
		return kerr.InvalidConfig, err.Error()
	}
	b.log.WithField("topic", name).WithError(err).Error("topic configs not stored")
	return kerr.KafkaStorageError, err.Error()
}
