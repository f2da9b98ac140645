package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/unilog/unilog/bench"
)

// benchMachineCommand prints the Machine table of a report without running
// a benchmark: a reader comparing CPU seconds per GB across machines needs
// the unit costs of both.
func benchMachineCommand() *cli.Command {
	return &cli.Command{
		Name:  "machine",
		Usage: "print this machine's description and its kernel's unit costs (a system call, a fresh anonymous page, a mapped file page) as a Markdown table",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Value: "bench-data", Usage: "directory on the disk under test (created if missing; the probe's scratch file is removed)"},
		},
		Action: func(c *cli.Context) error {
			dir := c.String("dir")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("bench machine: %w", err)
			}
			m := bench.DescribeMachine(dir)
			bench.WriteMachineRows(c.App.Writer, m)
			return m.CostsErr
		},
	}
}
