package bench

import (
	"context"
	"time"
)

// RunProduce produces load to a Kafka-protocol broker through franz-go,
// creating the topic with load.Partitions when it does not exist.
func RunProduce(ctx context.Context, client KafkaClient, load Load) (ProduceResult, error) {
	t, err := newKafkaTarget(client)
	if err != nil {
		return ProduceResult{}, err
	}
	defer t.Close()
	if err := t.Prepare(ctx, load.Partitions); err != nil {
		return ProduceResult{}, err
	}
	return produce(ctx, t, load)
}

// RunConsume reads every partition of the topic from its start, assigned
// directly (no group), until records have arrived (0: all stored when it
// started) or maxWait passed (0: no bound).
func RunConsume(ctx context.Context, client KafkaClient, records int64, maxWait time.Duration, progress bool) (ConsumeResult, error) {
	t, err := newKafkaTarget(client)
	if err != nil {
		return ConsumeResult{}, err
	}
	defer t.Close()
	return consume(ctx, t, 0, records, maxWait, progress)
}

// WriteProduceJSON writes one produce result.
func WriteProduceJSON(path string, r ProduceResult) error { return writeJSONFile(path, r) }

// WriteConsumeJSON writes one consume result.
func WriteConsumeJSON(path string, r ConsumeResult) error { return writeJSONFile(path, r) }
