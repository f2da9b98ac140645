package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

// Placeholder until the topic command lands; replaced by its owner.
func topicCommand() *cli.Command {
	return &cli.Command{Name: "topic", Action: func(*cli.Context) error { return errors.New("topic: not built yet") }}
}
