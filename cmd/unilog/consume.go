package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

// Placeholder until the consume command lands; replaced by its owner.
func consumeCommand() *cli.Command {
	return &cli.Command{Name: "consume", Action: func(*cli.Context) error { return errors.New("consume: not built yet") }}
}
