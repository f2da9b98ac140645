// Command unilog runs the unilog broker and its tools.
package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"
)

func main() {
	app := &cli.App{
		Name:  "unilog",
		Usage: "a Kafka-protocol message broker on one sequential, memory-mapped commit log",
		Commands: []*cli.Command{
			brokerCommand(),
			topicCommand(),
			produceCommand(),
			consumeCommand(),
			groupCommand(),
			inspectCommand(),
			benchCommand(),
			clusterCommand(),
			userCommand(),
		},
	}
	if err := app.Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "unilog:", err)
		os.Exit(1)
	}
}
