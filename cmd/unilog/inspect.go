package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

// Placeholder until the inspect command lands; replaced by its owner.
func inspectCommand() *cli.Command {
	return &cli.Command{Name: "inspect", Action: func(*cli.Context) error { return errors.New("inspect: not built yet") }}
}
