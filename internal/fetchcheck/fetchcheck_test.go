package fetchcheck

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRunWaitsForTopic starts a run before the broker fetched from knows
// the topic, as a replica group's leader does for a moment after another
// node created it: the run waits for the topic instead of counting the
// broker's UNKNOWN_TOPIC_OR_PARTITION answers as broken fetches.
// kfake stands in for the broker; the contract holds for it.
func TestRunWaitsForTopic(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	seeds := c.ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	created := make(chan error, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
		if err != nil {
			created <- err
			return
		}
		defer cl.Close()
		_, err = kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "late")
		created <- err
	}()
	res, err := Run(ctx, Config{Seeds: seeds, Topic: "late", Partitions: 2, Produce: time.Second, Records: 2000})
	if cerr := <-created; cerr != nil {
		t.Fatalf("create topic: %v", cerr)
	}
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if res.Produced == 0 || res.Fetched != res.Produced {
		t.Fatalf("fetched %d records, %d produced", res.Fetched, res.Produced)
	}
}
