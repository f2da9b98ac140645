package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

// Placeholder until the produce command lands; replaced by its owner.
func produceCommand() *cli.Command {
	return &cli.Command{Name: "produce", Action: func(*cli.Context) error { return errors.New("produce: not built yet") }}
}
