package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

// Placeholder until the bench command lands; replaced by its owner.
func benchCommand() *cli.Command {
	return &cli.Command{Name: "bench", Action: func(*cli.Context) error { return errors.New("bench: not built yet") }}
}
