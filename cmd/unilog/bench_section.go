package main

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/unilog/unilog/bench"
)

// benchSectionCommand lets a script (scripts/bench-million.sh) regenerate
// its own section of docs/BENCHMARKS.md the way the bench commands do.
func benchSectionCommand() *cli.Command {
	return &cli.Command{
		Name:  "section",
		Usage: "replace the section of a Markdown file headed by the first line of standard input with standard input (appended if missing)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "markdown", Required: true, Usage: "Markdown `FILE` to change"},
		},
		Action: func(c *cli.Context) error {
			block, err := io.ReadAll(c.App.Reader)
			if err != nil {
				return fmt.Errorf("bench section: read: %w", err)
			}
			if len(block) == 0 || block[0] != '#' {
				return fmt.Errorf("bench section: standard input must start with a Markdown heading")
			}
			return bench.WriteSection(c.String("markdown"), block)
		},
	}
}
