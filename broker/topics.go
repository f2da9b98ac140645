package broker

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/unilog/unilog/auth"
)

// maxPartitions bounds one topic's partition count; far beyond what one
// broker's consume queues are sized for, it only stops absurd requests.
const maxPartitions = 100_000

// createTopic validates and durably creates a topic with its own configs
// (nil for none). The caller holds topicMu exclusively.
func (b *Broker) createTopic(name string, partitions int32, configs map[string]string, validateOnly bool) (*kerr.Error, string) {
	if err := validTopicName(name); err != nil {
		return kerr.InvalidTopicException, err.Error()
	}
	if isInternalTopic(name) {
		return kerr.InvalidTopicException, "topic names starting with __ are reserved for internal topics"
	}
	if partitions == -1 {
		partitions = b.cfg.DefaultPartitions
	}
	if partitions <= 0 || partitions > maxPartitions {
		return kerr.InvalidPartitions, "partition count must be between 1 and 100000"
	}
	if _, ok := b.meta.Topic(name); ok {
		return kerr.TopicAlreadyExists, "topic " + name + " already exists"
	}
	for k, v := range configs {
		if err := checkTopicConfig(k, &v); err != nil {
			return kerr.InvalidConfig, err.Error()
		}
	}
	if validateOnly {
		return nil, ""
	}
	t := TopicMeta{Name: name, Partitions: partitions, CreatedMs: time.Now().UnixMilli(), Configs: configs}
	if _, err := rand.Read(t.ID[:]); err != nil {
		return kerr.UnknownServerError, err.Error()
	}
	if err := b.meta.CreateTopic(t); err != nil {
		if errors.Is(err, ErrTopicExists) {
			return kerr.TopicAlreadyExists, err.Error()
		}
		b.log.WithFields(logrus.Fields{"topic": name, "error": err}).Error("create topic failed")
		return kerr.KafkaStorageError, err.Error()
	}
	b.log.WithFields(logrus.Fields{"topic": name, "partitions": partitions}).Info("topic created")
	return nil, ""
}

// maxAutoCreatePerRequest bounds the topics one Metadata or Produce
// request creates with AutoCreateTopics: each is a metadata write (and in
// a cluster a control-plane round trip), and a request naming 100,000
// unknown topics must not create them all. The rest are answered
// UNKNOWN_TOPIC_OR_PARTITION, which clients retry, so one that means it
// creates them a hundred per request; CreateTopics is not bounded.
const maxAutoCreatePerRequest = 100

// autoCreateLimitMsg is the Produce error message of a topic left
// uncreated by the bound.
var autoCreateLimitMsg = fmt.Sprintf("not auto-created: one request creates at most %d topics; retry, or create it with CreateTopics", maxAutoCreatePerRequest)

// autoCreator creates the unknown topics of one request.
type autoCreator struct {
	b       *Broker
	api     string
	created int
	refused int
}

func (b *Broker) autoCreator(api string) *autoCreator { return &autoCreator{b: b, api: api} }

// create creates an unknown, validly named topic with the default
// partition count; false when the request's bound left it uncreated.
func (a *autoCreator) create(name string) bool {
	b := a.b
	if _, ok := b.meta.Topic(name); ok || validTopicName(name) != nil {
		return true
	}
	if a.created >= maxAutoCreatePerRequest {
		a.refused++
		return false
	}
	a.created++
	b.topicMu.Lock()
	defer b.topicMu.Unlock()
	b.createTopic(name, b.cfg.DefaultPartitions, nil, false)
	return true
}

// done logs the topics the bound left uncreated, once per request.
func (a *autoCreator) done(c *conn) {
	if a.refused > 0 {
		a.b.log.WithFields(logrus.Fields{"remote": c.remote, "api": a.api, "created": a.created, "refused": a.refused}).Warn("auto-creation bound reached: topics left uncreated")
	}
}

func init() {
	register(kmsg.CreateTopics, 0, 7, (*Broker).handleCreateTopics, authorizeCreateTopics)
}

// authorizeCreateTopics: a topic the principal may not administer is
// answered TOPIC_AUTHORIZATION_FAILED.
func authorizeCreateTopics(z authz, req kmsg.Request) (kmsg.Response, error) {
	r := req.(*kmsg.CreateTopicsRequest)
	return authorizeEach(z, &r.Topics, topicNamed(func(t kmsg.CreateTopicsRequestTopic) string { return t.Topic }, z.allow(auth.Admin)),
		func(cr *kmsg.CreateTopicsResponse, t kmsg.CreateTopicsRequestTopic) {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic = t.Topic
			rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			rt.NumPartitions, rt.ReplicationFactor = -1, -1
			cr.Topics = append(cr.Topics, rt)
		})
}

func (b *Broker) handleCreateTopics(_ context.Context, _ *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	b.topicMu.Lock()
	defer b.topicMu.Unlock()
	seen := make(map[string]int)
	for _, t := range req.Topics {
		seen[t.Topic]++
	}
	for _, t := range req.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		rt.NumPartitions = -1
		rt.ReplicationFactor = -1
		partitions := t.NumPartitions
		var (
			kerrv *kerr.Error
			msg   string
		)
		if len(t.ReplicaAssignment) > 0 {
			partitions = int32(len(t.ReplicaAssignment))
			var replicas [][]int32
			if replicas, kerrv, msg = createTopicsAssignment(t.NumPartitions, t.ReplicationFactor, t.ReplicaAssignment); kerrv == nil {
				kerrv, msg = b.checkAssignment(replicas)
			}
		}
		switch {
		case seen[t.Topic] > 1:
			kerrv, msg = kerr.InvalidRequest, "topic named more than once"
		case kerrv != nil:
		case t.ReplicationFactor != -1 && t.ReplicationFactor != 1:
			kerrv, msg = kerr.InvalidReplicationFactor, "this broker stores one replica of every partition"
		default:
			kerrv, msg = b.createTopic(t.Topic, partitions, createConfigs(t.Configs), req.ValidateOnly)
		}
		if kerrv != nil {
			rt.ErrorCode = kerrv.Code
			rt.ErrorMessage = &msg
		} else {
			if partitions == -1 {
				partitions = b.cfg.DefaultPartitions
			}
			rt.NumPartitions = partitions
			rt.ReplicationFactor = 1
			m, ok := b.meta.Topic(t.Topic)
			if ok {
				rt.TopicID = m.ID
			} else {
				m.Configs = createConfigs(t.Configs) // validate only
			}
			// v5+: the configs the topic was created with, as DescribeConfigs.
			for _, e := range b.topicConfigEntries(m) {
				rc := kmsg.NewCreateTopicsResponseTopicConfig()
				d := e.describe()
				rc.Name, rc.Value, rc.ReadOnly, rc.Source = d.Name, d.Value, d.ReadOnly, int8(d.Source)
				rt.Configs = append(rt.Configs, rc)
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// createConfigs are a CreateTopics topic's configs; a null value leaves
// the config at its default, as Kafka.
func createConfigs(cs []kmsg.CreateTopicsRequestTopicConfig) map[string]string {
	var out map[string]string
	for _, c := range cs {
		if c.Value == nil {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(cs))
		}
		out[c.Name] = *c.Value
	}
	return out
}

func init() {
	register(kmsg.DeleteTopics, 0, 6, (*Broker).handleDeleteTopics, authorizeDeleteTopics)
}

// authorizeDeleteTopics: a topic the principal may not administer, named or
// by id, is answered TOPIC_AUTHORIZATION_FAILED.
func authorizeDeleteTopics(z authz, req kmsg.Request) (kmsg.Response, error) {
	r := req.(*kmsg.DeleteTopicsRequest)
	var outNames []string
	var out []kmsg.DeleteTopicsRequestTopic
	r.TopicNames, outNames = splitByName(r.TopicNames, func(t string) string { return t }, z.allow(auth.Admin))
	r.Topics, out = splitByName(r.Topics, func(t kmsg.DeleteTopicsRequestTopic) string {
		if t.Topic != nil {
			return *t.Topic
		}
		return z.b.topicNameByID(t.TopicID)
	}, z.allow(auth.Admin))
	resp, err := z.run()
	if len(out)+len(outNames) == 0 || err != nil {
		return resp, err
	}
	dr := resp.(*kmsg.DeleteTopicsResponse)
	for _, name := range outNames {
		out = append(out, kmsg.DeleteTopicsRequestTopic{Topic: kmsg.StringPtr(name)})
	}
	for _, t := range out {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
		dr.Topics = append(dr.Topics, rt)
	}
	return dr, nil
}

func (b *Broker) handleDeleteTopics(ctx context.Context, _ *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	if req.TimeoutMillis > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMillis)*time.Millisecond)
		defer cancel()
	}
	names := req.TopicNames
	var byID map[int]bool // indexes of names given by a topic id
	if req.Version >= 6 {
		names = names[:0:0]
		byID = make(map[int]bool)
		for i, t := range req.Topics {
			switch {
			case t.Topic != nil:
				names = append(names, *t.Topic)
			default:
				names = append(names, b.topicNameByID(t.TopicID))
				byID[i] = true
			}
		}
	}
	var deleted []int // indexes into resp.Topics whose queues are to go
	b.topicMu.Lock()
	for i, name := range names {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic = kmsg.StringPtr(name)
		m, ok := b.meta.Topic(name)
		if !ok || isInternalTopic(name) {
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			switch {
			case ok:
				rt.ErrorCode = kerr.InvalidTopicException.Code
			case byID[i]:
				rt.Topic = nil
				rt.TopicID = req.Topics[i].TopicID
				rt.ErrorCode = kerr.UnknownTopicID.Code
			}
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		rt.TopicID = m.ID
		if err := b.meta.DeleteTopic(name); err != nil {
			rt.ErrorCode = kerr.KafkaStorageError.Code
			msg := err.Error()
			rt.ErrorMessage = &msg
		} else {
			b.forgetTopic(name)
			deleted = append(deleted, len(resp.Topics))
		}
		resp.Topics = append(resp.Topics, rt)
	}
	b.topicMu.Unlock()
	for _, i := range deleted {
		b.dropQueues(ctx, &resp.Topics[i])
	}
	return resp, nil
}

// dropQueues deletes the consume queues of a topic already removed from
// metadata. The removal, under topicMu, is what makes the incarnation dead:
// no produce appends to it after, the dispatcher indexes none of its
// records still in flight (nor a later recovery), and a re-created topic
// has another TopicID and queues of its own. So the wait for the
// dispatcher needs no lock, and the request's timeout and connection bound
// it: past them the answer is REQUEST_TIMED_OUT, as Kafka's when a deletion
// outlasts the timeout, and the queues go later (the next delete of the
// name or the next start). The records leave the commit log by retention.
func (b *Broker) dropQueues(ctx context.Context, rt *kmsg.DeleteTopicsResponseTopic) {
	name := *rt.Topic
	err := b.st.DeleteTopic(ctx, name)
	switch {
	case err == nil:
		b.log.WithField("topic", name).Info("topic deleted")
		return
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		rt.ErrorCode = kerr.RequestTimedOut.Code
		b.log.WithFields(logrus.Fields{"topic": name, "error": err}).Warn("topic deleted; its queues go later")
	default:
		rt.ErrorCode = kerr.KafkaStorageError.Code
		b.log.WithFields(logrus.Fields{"topic": name, "error": err}).Error("topic deleted; deleting its queues failed")
	}
	msg := err.Error()
	rt.ErrorMessage = &msg
}

func (b *Broker) topicNameByID(id [16]byte) string {
	for _, t := range b.meta.Topics() {
		if t.ID == id {
			return t.Name
		}
	}
	return ""
}

func init() {
	register(kmsg.CreatePartitions, 0, 3, (*Broker).handleCreatePartitions, authorizeCreatePartitions)
}

// authorizeCreatePartitions: a topic the principal may not administer is
// answered TOPIC_AUTHORIZATION_FAILED.
func authorizeCreatePartitions(z authz, req kmsg.Request) (kmsg.Response, error) {
	r := req.(*kmsg.CreatePartitionsRequest)
	return authorizeEach(z, &r.Topics, topicNamed(func(t kmsg.CreatePartitionsRequestTopic) string { return t.Topic }, z.allow(auth.Admin)),
		func(cr *kmsg.CreatePartitionsResponse, t kmsg.CreatePartitionsRequestTopic) {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic = t.Topic
			rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			cr.Topics = append(cr.Topics, rt)
		})
}

func (b *Broker) handleCreatePartitions(_ context.Context, _ *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	b.topicMu.Lock()
	defer b.topicMu.Unlock()
	for _, t := range req.Topics {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic = t.Topic
		m, ok := b.meta.Topic(t.Topic)
		var (
			msg       string
			assignErr *kerr.Error
		)
		if ok && t.Assignment != nil {
			assignErr, msg = b.checkAddedAssignment(t.Assignment, t.Count-m.Partitions)
		}
		switch {
		case !ok:
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		case isInternalTopic(t.Topic):
			// Groups are hashed onto the offsets topic's partitions.
			rt.ErrorCode, msg = kerr.InvalidTopicException.Code, "internal topics cannot grow"
		case t.Count <= m.Partitions:
			rt.ErrorCode, msg = kerr.InvalidPartitions.Code, "topic already has at least that many partitions"
		case t.Count > maxPartitions:
			rt.ErrorCode, msg = kerr.InvalidPartitions.Code, "partition count must be at most 100000"
		case assignErr != nil:
			rt.ErrorCode = assignErr.Code
		case req.ValidateOnly:
		default:
			if err := b.meta.SetPartitions(t.Topic, t.Count); err != nil {
				rt.ErrorCode, msg = kerr.KafkaStorageError.Code, err.Error()
			} else {
				b.log.WithFields(logrus.Fields{"topic": t.Topic, "partitions": t.Count}).Info("partitions added")
			}
		}
		if msg != "" {
			rt.ErrorMessage = &msg
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
