package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// jetStreamTarget loads NATS JetStream the way a Kafka topic is loaded:
// one stream whose subjects <topic>.<partition> stand for the partitions,
// file storage, asynchronous publishes each acknowledged by the server
// (JetStream always acknowledges a stored message; there is no acks=0).
type jetStreamTarget struct {
	url    string
	stream string
	nc     *nats.Conn
	js     jetstream.JetStream
	// inFlight bounds the unacknowledged publishes of one sender, as
	// KafkaClient.MaxInFlight bounds a Kafka producer's buffer: Send
	// blocks beyond it instead of failing.
	inFlight int
	// subjects are made once by Prepare, not a string per record.
	subjects []string
}

func newJetStreamTarget(url, topic string, inFlight int) (*jetStreamTarget, error) {
	if inFlight <= 0 {
		inFlight = DefaultMaxInFlight
	}
	nc, err := nats.Connect(url)
	if err != nil {
		return nil, fmt.Errorf("bench: nats connect %s: %w", url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("bench: jetstream: %w", err)
	}
	return &jetStreamTarget{url: url, stream: topic, nc: nc, js: js, inFlight: inFlight}, nil
}

func (j *jetStreamTarget) subject(partition int32) string {
	if int(partition) < len(j.subjects) {
		return j.subjects[partition]
	}
	return j.stream + "." + strconv.Itoa(int(partition))
}

func (j *jetStreamTarget) Prepare(ctx context.Context, partitions int) error {
	j.subjects = nil
	subjects := make([]string, partitions)
	for p := range subjects {
		subjects[p] = j.subject(int32(p))
	}
	j.subjects = subjects
	_, err := j.js.CreateStream(ctx, jetstream.StreamConfig{
		Name:     j.stream,
		Subjects: []string{j.stream + ".*"},
		Storage:  jetstream.FileStorage,
		Replicas: 1,
	})
	if err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return fmt.Errorf("bench: create stream %s: %w", j.stream, err)
	}
	return nil
}

func (j *jetStreamTarget) NewSender() (sender, error) {
	s := &jsSender{slots: make(chan struct{}, j.inFlight), done: map[*nats.Msg]acker{}}
	nc, err := nats.Connect(j.url)
	if err != nil {
		return nil, fmt.Errorf("bench: nats connect %s: %w", j.url, err)
	}
	s.nc, s.subject = nc, j.subject
	js, err := jetstream.New(nc,
		jetstream.WithPublishAsyncMaxPending(2*j.inFlight),
		jetstream.WithPublishAsyncAckHandler(func(_ jetstream.JetStream, m *nats.Msg, _ *jetstream.PubAck) { s.finish(m, nil) }),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, m *nats.Msg, err error) {
			s.finish(m, fmt.Errorf("%w: %s: %w", errProduce, m.Subject, err))
		}))
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("bench: jetstream: %w", err)
	}
	s.js = js
	return s, nil
}

type jsSender struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	subject func(int32) string
	slots   chan struct{}
	mu      sync.Mutex
	done    map[*nats.Msg]acker
}

func (s *jsSender) Send(ctx context.Context, partition int32, value []byte, rec acker) error {
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	m := &nats.Msg{Subject: s.subject(partition), Data: value}
	s.mu.Lock()
	s.done[m] = rec
	s.mu.Unlock()
	if _, err := s.js.PublishMsgAsync(m); err != nil {
		s.finish(m, fmt.Errorf("%w: %s: %w", errProduce, m.Subject, err))
	}
	return nil
}

func (s *jsSender) finish(m *nats.Msg, err error) {
	s.mu.Lock()
	rec, ok := s.done[m]
	delete(s.done, m)
	s.mu.Unlock()
	if !ok {
		return
	}
	<-s.slots
	rec.ack(err)
}

func (s *jsSender) Flush(ctx context.Context) error {
	select {
	case <-s.js.PublishAsyncComplete():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *jsSender) Close() { s.nc.Close() }

func (j *jetStreamTarget) NewReceiver(ctx context.Context, partitions int) (receiver, int64, error) {
	st, err := j.js.Stream(ctx, j.stream)
	if err != nil {
		return nil, 0, fmt.Errorf("bench: stream %s: %w", j.stream, err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("bench: stream %s: %w", j.stream, err)
	}
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return nil, 0, fmt.Errorf("bench: consumer on %s: %w", j.stream, err)
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(1000))
	if err != nil {
		return nil, 0, fmt.Errorf("bench: consume %s: %w", j.stream, err)
	}
	return jsReceiver{it}, int64(info.State.Msgs), nil
}

type jsReceiver struct{ it jetstream.MessagesContext }

func (r jsReceiver) Poll(ctx context.Context, fn func([]byte)) error {
	m, err := r.it.Next(jetstream.NextContext(ctx))
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("bench: jetstream next: %w", err)
	}
	fn(m.Data())
	return nil
}

func (r jsReceiver) Close() { r.it.Stop() }

func (j *jetStreamTarget) Close() { j.nc.Close() }
