package bench

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// kfakeServer is franz-go's in-memory Kafka: no storage and no flush, the
// floor a broker's protocol handling can be held against.
type kfakeServer struct{ c *kfake.Cluster }

func startKfake() (Server, error) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		return nil, fmt.Errorf("bench: kfake: %w", err)
	}
	return kfakeServer{c}, nil
}

func (k kfakeServer) Addr() string                { return k.c.ListenAddrs()[0] }
func (k kfakeServer) CPU() (time.Duration, error) { return selfCPU() }
func (k kfakeServer) CPUSource() string           { return CPUSelf }
func (k kfakeServer) Close() error {
	k.c.Close()
	return nil
}
