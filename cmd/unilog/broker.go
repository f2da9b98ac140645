package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

// Placeholder until the broker command lands; replaced by its owner.
func brokerCommand() *cli.Command {
	return &cli.Command{Name: "broker", Action: func(*cli.Context) error { return errors.New("broker: not built yet") }}
}
