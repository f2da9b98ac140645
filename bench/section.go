package bench

import (
	"bytes"
	"fmt"
	"os"
	"strings"
)

// The generated reports are sections of docs/BENCHMARKS.md among
// hand-written ones (measurements no command regenerates). Each generator
// replaces only its own section: from its heading line to the next heading
// of the same or a higher level, headings inside fenced code blocks not
// counting. A missing section is appended.

// writeSection replaces (or appends) the section that block starts with,
// its first line being the section's heading, in the Markdown file at path.
func writeSection(path string, block []byte) error {
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("bench: markdown: %w", err)
	}
	if err := os.WriteFile(path, replaceSection(old, block), 0o644); err != nil {
		return fmt.Errorf("bench: markdown: %w", err)
	}
	return nil
}

// replaceSection returns doc with the section headed by block's first line
// replaced by block, or with block appended after a blank line.
func replaceSection(doc, block []byte) []byte {
	heading, _, _ := strings.Cut(string(block), "\n")
	level := headingLevel(heading)
	lines := strings.SplitAfter(string(doc), "\n")
	start, end := -1, len(lines)
	fenced := false
	for i, l := range lines {
		line := strings.TrimRight(l, "\n")
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		switch {
		case start < 0 && line == heading:
			start = i
		case start >= 0:
			if n := headingLevel(line); n > 0 && n <= level {
				end = i
			}
		}
		if end < len(lines) {
			break
		}
	}
	var out bytes.Buffer
	if start < 0 {
		out.Write(doc)
		if len(doc) > 0 && !bytes.HasSuffix(doc, []byte("\n\n")) {
			out.WriteString("\n")
		}
		out.Write(block)
		return out.Bytes()
	}
	out.WriteString(strings.Join(lines[:start], ""))
	out.Write(block)
	if end < len(lines) {
		if !bytes.HasSuffix(block, []byte("\n\n")) {
			out.WriteString("\n")
		}
		out.WriteString(strings.Join(lines[end:], ""))
	}
	return out.Bytes()
}

// headingLevel is the number of leading '#' of an ATX heading, 0 for any
// other line.
func headingLevel(line string) int {
	n := len(line) - len(strings.TrimLeft(line, "#"))
	if n == 0 || n > 6 || len(line) > n && line[n] != ' ' {
		return 0
	}
	return n
}

// WriteSection is writeSection for generators outside this package: a
// script's section, written through `unilog bench section`.
func WriteSection(path string, block []byte) error { return writeSection(path, block) }
