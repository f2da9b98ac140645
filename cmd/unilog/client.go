package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"
)

// The client commands (topic, produce, consume) speak plain Kafka through
// franz-go, so they work against unilog and against any other Kafka broker.

const defaultBrokers = "127.0.0.1:9092"

// kafkaClientFlags are the connection flags every client command carries.
func kafkaClientFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{
			Name:    "brokers",
			Aliases: []string{"b"},
			Value:   defaultBrokers,
			Usage:   "seed brokers, `HOST:PORT,...`",
			EnvVars: []string{"UNILOG_BROKERS"},
		},
		&cli.DurationFlag{
			Name:    "timeout",
			Value:   30 * time.Second,
			Usage:   "give up on metadata, admin requests and record delivery after this long",
			EnvVars: []string{"UNILOG_TIMEOUT"},
		},
	}, clientSecurityFlags()...)
}

// splitBrokerList parses the --brokers value; empty entries are an error
// because they are always a typo ("a:9092,,b:9092").
func splitBrokerList(s string) ([]string, error) {
	var out []string
	for _, b := range strings.Split(s, ",") {
		b = strings.TrimSpace(b)
		if b == "" {
			return nil, fmt.Errorf("--brokers %q: empty broker address", s)
		}
		out = append(out, b)
	}
	return out, nil
}

// newKafkaClient connects to the brokers named by --brokers.
func newKafkaClient(c *cli.Context, opts ...kgo.Opt) (*kgo.Client, error) {
	seeds, err := splitBrokerList(c.String("brokers"))
	if err != nil {
		return nil, err
	}
	sec, err := clientSecurityOpts(c)
	if err != nil {
		return nil, err
	}
	base := append([]kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ClientID("unilog-cli"),
		kgo.RetryTimeout(c.Duration("timeout")),
		// franz-go asks for Metadata at most every 5 s by default: a
		// command started while a replica group fails over would wait
		// that long to see the new leader, several times the failover.
		// At 250 ms the command still found a leader that had its
		// follower in sync up to 0.9 s late (docs/BENCHMARKS.md).
		kgo.MetadataMinAge(100 * time.Millisecond),
		// franz-go backs off 250 ms doubling to 5 s per failed try: the
		// tries at a leader that just died (refused at once) push the
		// next one past the failover itself, up to 2 s later.
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
	}, sec...)
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka client for %s: %w", strings.Join(seeds, ","), err)
	}
	return cl, nil
}

// requestContext bounds one admin round trip by --timeout.
func requestContext(c *cli.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.Context, c.Duration("timeout"))
}

// kvFlag collects repeated KEY=VALUE flags in order. Unlike
// cli.StringSliceFlag it never splits on commas, so values such as
// cleanup.policy=compact,delete arrive intact. A kvFlag must have no
// aliases: urfave/cli copies an aliased flag's value to its other names by
// String and Set, which would duplicate every pair.
type kvFlag struct {
	pairs []kvPair
}

type kvPair struct {
	key, value string
}

func (f *kvFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", s)
	}
	f.pairs = append(f.pairs, kvPair{k, v})
	return nil
}

func (f *kvFlag) String() string {
	parts := make([]string, len(f.pairs))
	for i, p := range f.pairs {
		parts[i] = p.key + "=" + p.value
	}
	return strings.Join(parts, ",")
}

// kvPairs returns the pairs collected by the kvFlag named name.
func kvPairs(c *cli.Context, name string) []kvPair {
	if f, ok := c.Generic(name).(*kvFlag); ok {
		return f.pairs
	}
	return nil
}

// parseSeparator turns a separator as typed on a shell command line ('\t',
// '\x00', '|') into its bytes, so `--key-separator '\t'` means a tab.
func parseSeparator(s string) ([]byte, error) {
	if s == "" {
		return nil, errors.New("separator must not be empty")
	}
	if strings.Contains(s, `\`) {
		u, err := strconv.Unquote(`"` + s + `"`)
		if err != nil {
			return nil, fmt.Errorf("separator %q: bad escape: %w", s, err)
		}
		s = u
	}
	return []byte(s), nil
}
